# liblens's layers (docs/design/architecture.md): one OBJECT library per folder of src/, whose
# objects all go into the one library `lens`. The order between layers is enforced twice:
# - by the compiler: a layer compiles against its own include view, a folder of the build tree
#   holding symbolic links to its own src/ folder and to those of the layers below it that it
#   depends on, instead of src/ itself. An #include "<layer>/..." of any other layer (above it,
#   or beside it) fails with "No such file or directory".
# - by the linker: each layer has a closure library, its objects and those of the layers it
#   depends on linked with -Wl,--no-undefined against only the libraries those layers USE. A call
#   into an undeclared layer (through a public header, which every layer sees) or into a library
#   the layer does not declare fails to link (CTest tests layers.link.*).

# What every object file of liblens compiles with: the public headers and the OpenTelemetry API
# they include. A layer adds the libraries it uses (lens_layer USES).
add_library(lens_object_base INTERFACE)
target_include_directories(lens_object_base INTERFACE
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/generated/include
  ${PROJECT_SOURCE_DIR}/codec/include)
target_link_libraries(lens_object_base INTERFACE opentelemetry-cpp::api)
target_compile_features(lens_object_base INTERFACE cxx_std_20)
# Calls between liblens's own functions bind inside the library (no PLT, inlinable): the span
# hot path crosses a few of them per span.
target_compile_options(lens_object_base INTERFACE -fno-semantic-interposition)
# liblens must load by dlopen() (Python, plugins), so its thread_locals use the default TLS model,
# not initial-exec. Not the TLS-descriptor dialect (-mtls-dialect=gnu2) either: with glibc before
# 2.39 (Debian bookworm's 2.36) _dl_tlsdesc_dynamic does not preserve the vector registers GCC
# expects it to, so the first thread_local access of a thread in a dlopen()ed liblens corrupts
# the caller's state (seen: lens.setup_telemetry then shutdown() crashed in the Python module,
# tests/python/test_lifecycle.py).

# lens_layer(<name> [DEPENDS <layer>...] [USES <target>...] [OBJECTS <object library>...]):
# src/<name>/*.cpp as the OBJECT library lens_layer_<name>, added to `lens`. DEPENDS names the
# layers whose headers it includes or whose functions it calls; they must have been declared
# before it, so the declarations read bottom to top, and what they may use is usable too. USES
# names the libraries its own code calls (`lens` links their union); OBJECTS, object libraries
# of this project outside src/ that it calls (already in `lens`: codec/).
function(lens_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEPENDS;USES;OBJECTS")
  set(visible ${name})
  set(uses ${arg_USES})
  set(objects ${arg_OBJECTS})
  foreach(dependency IN LISTS arg_DEPENDS)
    get_property(below GLOBAL PROPERTY LENS_LAYER_VIEW_${dependency})
    if(NOT below)
      message(FATAL_ERROR "layer ${name} depends on ${dependency}, which is not a layer declared "
                          "below it")
    endif()
    get_property(below_uses GLOBAL PROPERTY LENS_LAYER_USES_${dependency})
    get_property(below_objects GLOBAL PROPERTY LENS_LAYER_OBJECTS_${dependency})
    list(APPEND visible ${below})
    list(APPEND uses ${below_uses})
    list(APPEND objects ${below_objects})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  list(REMOVE_DUPLICATES uses)
  list(REMOVE_DUPLICATES objects)
  set_property(GLOBAL PROPERTY LENS_LAYER_VIEW_${name} ${visible})
  set_property(GLOBAL APPEND PROPERTY LENS_LAYERS ${name})
  set_property(GLOBAL PROPERTY LENS_LAYER_USES_${name} ${uses})
  set_property(GLOBAL PROPERTY LENS_LAYER_OBJECTS_${name} ${objects})

  # The view is kept in step with the table on every configure: links to layers no longer
  # visible are removed (only the links: nothing under src/ is touched).
  set(view ${PROJECT_BINARY_DIR}/layers/${name})
  file(MAKE_DIRECTORY ${view})
  file(GLOB entries LIST_DIRECTORIES true RELATIVE ${view} ${view}/*)
  foreach(entry IN LISTS entries)
    if(NOT entry IN_LIST visible)
      file(REMOVE ${view}/${entry})
    endif()
  endforeach()
  foreach(layer IN LISTS visible)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${layer} ${view}/${layer} SYMBOLIC)
  endforeach()

  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  add_library(lens_layer_${name} OBJECT ${sources})
  target_include_directories(lens_layer_${name} PRIVATE ${view})
  target_link_libraries(lens_layer_${name} PRIVATE lens_object_base ${uses})
  lens_set_warnings(lens_layer_${name})
  target_sources(lens PRIVATE $<TARGET_OBJECTS:lens_layer_${name}>)
  target_link_libraries(lens PRIVATE ${arg_USES})

  if(NOT LENS_SANITIZER_FLAGS)
    lens_layer_closure(lens_layer_closure_${name} ${name})
  endif()
endfunction()

# lens_layer_closure(<target> <layer> [<source>...]): a shared library, outside the default
# build, of <layer>'s objects (and <source>s compiled as files of <layer>) and those of every
# layer it depends on, linked with --no-undefined against the libraries they use and nothing
# else: it links only if they call nothing undeclared (CTest tests layers.link.*). Only in builds
# without sanitizers, whose runtimes leave symbols to the executable.
function(lens_layer_closure target layer)
  get_property(visible GLOBAL PROPERTY LENS_LAYER_VIEW_${layer})
  get_property(uses GLOBAL PROPERTY LENS_LAYER_USES_${layer})
  get_property(object_libraries GLOBAL PROPERTY LENS_LAYER_OBJECTS_${layer})
  set(objects ${ARGN})
  foreach(member IN LISTS visible)
    list(APPEND objects $<TARGET_OBJECTS:lens_layer_${member}>)
  endforeach()
  foreach(library IN LISTS object_libraries)
    list(APPEND objects $<TARGET_OBJECTS:${library}>)
  endforeach()
  add_library(${target} SHARED EXCLUDE_FROM_ALL ${objects})
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/layers/${layer})
  target_link_libraries(${target} PRIVATE lens_object_base)
  lens_set_warnings(${target})
  target_link_libraries(${target} PRIVATE ${uses})
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX
                                             LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/layers)
endfunction()

# lens_layer_probe(<target> <layer> <source>): <source> compiled exactly as a file of <layer>,
# outside the default build: the CTest tests layers.* build such probes to show that the views
# hold (tests/CMakeLists.txt).
function(lens_layer_probe target layer source)
  add_library(${target} OBJECT EXCLUDE_FROM_ALL ${source})
  get_property(uses GLOBAL PROPERTY LENS_LAYER_USES_${layer})
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/layers/${layer})
  target_link_libraries(${target} PRIVATE lens_object_base ${uses})
  lens_set_warnings(${target})
  # Not in compile_commands.json: tools that compile every entry would trip over the probe
  # that is meant not to build.
  set_target_properties(${target} PROPERTIES EXPORT_COMPILE_COMMANDS OFF)
endfunction()
