# Warnings as errors for lens's own targets (third-party headers come in as system headers).
function(lens_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual)
  if(LENS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
