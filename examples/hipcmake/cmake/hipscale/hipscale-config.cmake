# A package config in the style of Debian 12's /usr/lib/x86_64-linux-gnu/cmake/hip/hip-config.cmake,
# which starts with cmake_minimum_required(VERSION 3.3).  CMake 4 stops here with
# "Compatibility with CMake < 3.5 has been removed from CMake" unless the environment
# says CMAKE_POLICY_VERSION_MINIMUM=3.5 (rocmbuild's set_cmake_policy_minimum remedy).
cmake_minimum_required(VERSION 3.3)
set(HIPSCALE_FACTOR 2)
set(hipscale_FOUND TRUE)
