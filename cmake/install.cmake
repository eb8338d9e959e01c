# What `cmake --install` puts under the prefix:
#   lib/libnccl.so.2.<api>, libnccl.so.2, libnccl.so   the library and its soname and link names
#   include/nccl.h, nccl_net.h, nccl_device/host.h     the public headers
#   lib/cmake/NCCL, lib/cmake/Braid                     find_package(NCCL) / find_package(Braid)
#   lib/pkgconfig/nccl.pc                               pkg-config --cflags --libs nccl
# The Python wheel (pyproject.toml, BRAID_PYTHON_WHEEL=ON) installs the same tree under its package
# folder, except that a wheel cannot hold symbolic links: there libnccl.so.2 is the library itself and
# libnccl.so a one-line linker script naming it, so the wheel holds one copy of the library.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(BRAID_PYTHON_WHEEL OR BRAID_PREBUILT_LIBNCCL)
  install(PROGRAMS $<TARGET_FILE:nccl> DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libnccl.so.2)  # mode 755
  # install(PROGRAMS) is not stripped by `cmake --install --strip` (only targets are); the wheel is.
  set(installed "\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libnccl.so.2")
  install(CODE "
    if(CMAKE_INSTALL_DO_STRIP)
      execute_process(COMMAND \"${CMAKE_STRIP}\" \"${installed}\" COMMAND_ERROR_IS_FATAL ANY)
    endif()")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/wheel/libnccl.so
       "/* GNU ld script: -lnccl links libnccl.so.2 */\nINPUT(libnccl.so.2)\n")
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/wheel/libnccl.so DESTINATION ${CMAKE_INSTALL_LIBDIR})
else()  # cmake --install of a build tree
  install(TARGETS nccl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/include/nccl.h ${PROJECT_SOURCE_DIR}/include/nccl_net.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/nccl_device/host.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nccl_device)

# CMake package configuration, relocatable (paths relative to the config file).
set(BRAID_NCCL_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/NCCL)
set(BRAID_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Braid)
set(gen ${CMAKE_CURRENT_BINARY_DIR}/package)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/NCCLConfig.cmake.in ${gen}/NCCLConfig.cmake
  INSTALL_DESTINATION ${BRAID_NCCL_CONFIG_DIR} PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${gen}/NCCLConfigVersion.cmake VERSION ${BRAID_NCCL_API_VERSION}
  COMPATIBILITY SameMajorVersion)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/BraidConfig.cmake.in ${gen}/BraidConfig.cmake
  INSTALL_DESTINATION ${BRAID_CONFIG_DIR} PATH_VARS BRAID_NCCL_CONFIG_DIR)
write_basic_package_version_file(${gen}/BraidConfigVersion.cmake VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${gen}/NCCLConfig.cmake ${gen}/NCCLConfigVersion.cmake DESTINATION ${BRAID_NCCL_CONFIG_DIR})
install(FILES ${gen}/BraidConfig.cmake ${gen}/BraidConfigVersion.cmake DESTINATION ${BRAID_CONFIG_DIR})

# pkg-config: the prefix is found from the .pc file's own folder, so the tree can be moved.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  message(FATAL_ERROR "nccl.pc needs a relative CMAKE_INSTALL_LIBDIR, got ${CMAKE_INSTALL_LIBDIR}")
endif()
file(RELATIVE_PATH BRAID_PC_PREFIX_FROM_PCDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" BRAID_PC_PREFIX_FROM_PCDIR "${BRAID_PC_PREFIX_FROM_PCDIR}")
list(GET CUDAToolkit_INCLUDE_DIRS 0 BRAID_PC_CUDA_INCLUDE_DIR)
configure_file(${CMAKE_CURRENT_LIST_DIR}/nccl.pc.in ${gen}/nccl.pc @ONLY)
install(FILES ${gen}/nccl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
