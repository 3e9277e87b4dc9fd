// Ending the connections a server thread is stuck on. cpp-httplib 0.11 bounds each read, not a
// whole request, and gives no access to its connections' sockets: a client that trickles its
// request a byte at a time holds a worker, and a stop that joins the workers, forever.
#pragma once

#include <sys/types.h>

#include <vector>

namespace lens::cli {

// A connected TCP socket of this process: its descriptor, and its inode, which tells it from a
// later socket that reuses the number.
struct ConnectedSocket {
  int fd;
  ino_t inode;
};

// The connected TCP sockets of this process whose local port is `local_port` (read from
// /proc/self/fd; a listening socket is not one).
std::vector<ConnectedSocket> connected_sockets_on_port(int local_port);

// Shuts `socket` down (`how`: SHUT_RD or SHUT_RDWR, without closing: its owner still holds the
// descriptor) when the descriptor is still that socket, not closed and reused since it was listed.
// True when it was shut down.
bool shut_down_if_unchanged(const ConnectedSocket& socket, int how);

// The local port of the connected TCP socket `fd`, or -1 for anything else (files, listening
// sockets, other families).
int connected_local_port(int fd);

// Shuts down (SHUT_RDWR, without closing: the descriptors stay valid for the threads that own
// them) every connected TCP socket of this process whose local port is `local_port`; a thread
// blocked reading one wakes to end of file. Returns how many were shut down.
int shut_down_connections_on_port(int local_port);

}  // namespace lens::cli
