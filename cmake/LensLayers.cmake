# liblens's layers (docs/design/architecture.md): one OBJECT library per folder of src/, whose
# objects all go into the one library `lens`. The order between layers is enforced by the
# compiler: a layer compiles against its own include view, a folder of the build tree holding
# symbolic links to its own src/ folder and to those of the layers below it that it depends on,
# instead of src/ itself. An #include "<layer>/..." of any other layer (above it, or beside it)
# fails with "No such file or directory". The public headers stay visible to every layer.

# What every object file of liblens compiles with: the public headers, the dependencies' headers
# and the flags `lens` had as one target. The library itself links the same dependencies.
add_library(lens_object_base INTERFACE)
target_include_directories(lens_object_base INTERFACE
  ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/generated/include
  ${PROJECT_SOURCE_DIR}/codec/include)
target_link_libraries(lens_object_base INTERFACE ${LENS_PUBLIC_DEPENDENCIES}
                                                 ${LENS_PRIVATE_DEPENDENCIES})
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

# lens_layer(<name> [DEPENDS <layer>...]): src/<name>/*.cpp as the OBJECT library
# lens_layer_<name>, added to `lens`. DEPENDS names the layers whose headers it includes; they
# must have been declared before it, so the declarations read bottom to top, and what they may
# include is visible too.
function(lens_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEPENDS")
  set(visible ${name})
  foreach(dependency IN LISTS arg_DEPENDS)
    get_property(below GLOBAL PROPERTY LENS_LAYER_VIEW_${dependency})
    if(NOT below)
      message(FATAL_ERROR "layer ${name} depends on ${dependency}, which is not a layer declared "
                          "below it")
    endif()
    list(APPEND visible ${below})
  endforeach()
  list(REMOVE_DUPLICATES visible)
  set_property(GLOBAL PROPERTY LENS_LAYER_VIEW_${name} ${visible})

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
  target_link_libraries(lens_layer_${name} PRIVATE lens_object_base)
  lens_set_warnings(lens_layer_${name})
  target_sources(lens PRIVATE $<TARGET_OBJECTS:lens_layer_${name}>)
endfunction()

# lens_layer_probe(<target> <layer> <source>): <source> compiled exactly as a file of <layer>,
# outside the default build: the CTest tests layers.* build such probes to show that the views
# hold (tests/CMakeLists.txt).
function(lens_layer_probe target layer source)
  add_library(${target} OBJECT EXCLUDE_FROM_ALL ${source})
  target_include_directories(${target} PRIVATE ${PROJECT_BINARY_DIR}/layers/${layer})
  target_link_libraries(${target} PRIVATE lens_object_base)
  lens_set_warnings(${target})
  # Not in compile_commands.json: tools that compile every entry would trip over the probe
  # that is meant not to build.
  set_target_properties(${target} PROPERTIES EXPORT_COMPILE_COMMANDS OFF)
endfunction()
