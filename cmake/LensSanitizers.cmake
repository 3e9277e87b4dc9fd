# One sanitizer build at a time: ASan+UBSan, or TSan. Applies to every target in the tree.
#
# Sanitizer builds compile at -O1 with line tables only (-g1), whatever CMAKE_BUILD_TYPE says:
# that is what the sanitizers' own documentation recommends (-O1 keeps reports exact and the
# runtime fast), and it halves the compile time of -O2 -g (an ASan+UBSan test file: 133 s at
# -O2 -g, 59 s at -O1 -g1). Line tables are all a report's stack trace needs.
if(LENS_SANITIZE_ADDRESS AND LENS_SANITIZE_THREAD)
  message(FATAL_ERROR "LENS_SANITIZE_ADDRESS and LENS_SANITIZE_THREAD cannot be combined")
endif()
set(LENS_SANITIZER_FLAGS "")
if(LENS_SANITIZE_ADDRESS)
  set(LENS_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                           -fno-omit-frame-pointer)
elseif(LENS_SANITIZE_THREAD)
  set(LENS_SANITIZER_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
endif()
if(LENS_SANITIZER_FLAGS)
  # GCC 12's flow analysis reports false maybe-uninitialized warnings inside the standard
  # library when sanitizers instrument it; keep them visible but not fatal there.
  add_compile_options(${LENS_SANITIZER_FLAGS} -O1 -g1 -Wno-error=maybe-uninitialized)
  add_link_options(${LENS_SANITIZER_FLAGS})
endif()

# For the folders that hold only test code (tests/, fuzz/'s corpus runners). In the ASan+UBSan
# build they compile at -O0: instrumented exactly as the library, in half the time of -O1 (GCC's
# UBSan checks are costly to optimise); the library they drive stays at -O1. The ThreadSanitizer
# build keeps -O1, where -O0 would slow the concurrency tests' own threads several-fold. An
# optimised build (-O2, -O3) compiles test code at -O1: the library and the benchmarks keep the
# build's level, and test code gains nothing from -O2 but compile time.
macro(lens_compile_as_test_code)
  if(LENS_SANITIZE_ADDRESS)
    add_compile_options(-O0)
  elseif(NOT LENS_SANITIZER_FLAGS AND CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo)$")
    add_compile_options(-O1)
  endif()
endmacro()

# For a folder of code that is not lens's own (the libtorch example trainer): in a sanitizer
# build it is compiled without instrumentation (-O1, no debug info) and linked with the sanitizer
# runtime, so its processes still run the instrumented liblens and liblens_megatron. Its compile
# time is libtorch's headers, which instrumentation would triple.
macro(lens_compile_uninstrumented)
  if(LENS_SANITIZER_FLAGS)
    set_property(DIRECTORY PROPERTY COMPILE_OPTIONS -O1 -g0)
  endif()
endmacro()
