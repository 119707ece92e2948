# `cmake --install build --prefix DIR`: the client library as a CMake package (headers,
# libkingfisher.so, KingfisherConfig.cmake) and the two binaries. Another project then uses it
# with find_package(Kingfisher) and target_link_libraries(app Kingfisher::client): see
# examples/client and README.md "Using the client library".
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS kingfisher kfctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kingfisher
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
if(TARGET kf_client_shared)
  set(KF_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kingfisher)
  install(TARGETS kf_client_shared kf_public_headers EXPORT KingfisherTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT KingfisherTargets NAMESPACE Kingfisher:: DESTINATION ${KF_PACKAGE_DIR})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KingfisherConfig.cmake.in
    ${PROJECT_BINARY_DIR}/KingfisherConfig.cmake INSTALL_DESTINATION ${KF_PACKAGE_DIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/KingfisherConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/KingfisherConfig.cmake
    ${PROJECT_BINARY_DIR}/KingfisherConfigVersion.cmake DESTINATION ${KF_PACKAGE_DIR})
endif()
