# Unity builds for the large test binaries: their files include the same heavy headers
# (GoogleTest, the opentelemetry-cpp SDK, the OTLP protobuf classes), and compiling four of them
# as one translation unit measured 45% fewer compile-seconds in the ASan+UBSan build, 22% in the
# normal one (docs/development.md). LENS_UNITY_BUILD=OFF compiles them one by one, e.g. to find a
# file that does not build alone. Files of one batch share a translation unit, so file-local
# helpers need names of their own across a test folder.
option(LENS_UNITY_BUILD "Compile the test binaries as unity builds (faster, same tests)" ON)
set(LENS_UNITY_BUILD_BATCH_SIZE 4 CACHE STRING "Source files per unity translation unit")

function(lens_unity_build target)
  if(LENS_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                                               UNITY_BUILD_BATCH_SIZE ${LENS_UNITY_BUILD_BATCH_SIZE})
  endif()
endfunction()
