# Install rules: the library, public headers, an exported CMake package
# (find_package(lens) gives lens::lens, lens::instrumentation, lens::megatron and, when built,
# lens::mpi) and pkg-config files.
include(CMakePackageConfigHelpers)

set_target_properties(lens lens_megatron lens_cli PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

set(LENS_INSTALLED_LIBRARIES lens lens_setup lens_megatron)
if(TARGET lens_mpi)
  list(APPEND LENS_INSTALLED_LIBRARIES lens_mpi)
  set_target_properties(lens_mpi PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/mpi/include/lens DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(TARGETS ${LENS_INSTALLED_LIBRARIES} EXPORT lensTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS lens_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/lens DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/megatron/include/lens DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/generated/include/lens/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lens)

set(LENS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lens)
install(EXPORT lensTargets NAMESPACE lens:: DESTINATION ${LENS_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lensConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/lensConfig.cmake
                              INSTALL_DESTINATION ${LENS_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lensConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lensConfig.cmake ${PROJECT_BINARY_DIR}/lensConfigVersion.cmake
        DESTINATION ${LENS_CMAKE_DIR})

# Relocatable: the prefix is found from the .pc file's own place, so `cmake --install --prefix`
# anywhere yields a working pkg-config file.
file(RELATIVE_PATH LENS_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${PROJECT_SOURCE_DIR}/cmake/lens.pc.in ${PROJECT_BINARY_DIR}/lens.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/lens-megatron.pc.in ${PROJECT_BINARY_DIR}/lens-megatron.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lens.pc ${PROJECT_BINARY_DIR}/lens-megatron.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
