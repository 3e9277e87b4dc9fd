# One sanitizer build at a time: ASan+UBSan, or TSan. Applies to every target in the tree.
if(LENS_SANITIZE_ADDRESS AND LENS_SANITIZE_THREAD)
  message(FATAL_ERROR "LENS_SANITIZE_ADDRESS and LENS_SANITIZE_THREAD cannot be combined")
endif()
if(LENS_SANITIZE_ADDRESS)
  set(_lens_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=all
                           -fno-omit-frame-pointer)
elseif(LENS_SANITIZE_THREAD)
  set(_lens_sanitize_flags -fsanitize=thread -fno-omit-frame-pointer)
endif()
if(_lens_sanitize_flags)
  # GCC 12's flow analysis reports false maybe-uninitialized warnings inside the standard
  # library when sanitizers instrument it; keep them visible but not fatal there.
  add_compile_options(${_lens_sanitize_flags} -Wno-error=maybe-uninitialized)
  add_link_options(${_lens_sanitize_flags})
endif()
