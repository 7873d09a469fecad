# Installing vit, and its Debian package.
#   cmake --install build --prefix P   P/bin/vit, P/share/vit/configs/*.json,
#                                      P/share/doc/vit/{README.md,docs/}
#   (cd build && cpack -G DEB)         vit_<version>_amd64.deb, on Debian's LibTorch line
# vit finds the installed configs relative to its own binary
# (<bin>/../share/vit/configs; apps/vit/config_files.cpp), so an install
# under any prefix works without a configure-time path.
include(GNUInstallDirs)

# A binary installed against pip's LibTorch keeps the wheel's folders in its
# runpath; the system folders of Debian's LibTorch are left out as usual.
# (A target property: the CMAKE_ variable would apply only to targets made after it.)
set_target_properties(vit PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS vit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/vit/configs
        FILES_MATCHING PATTERN "*.json")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

# The package holds a binary linked to Debian's shared libraries, so it is
# made only on that line: a pip LibTorch is not a Debian package to depend on.
get_filename_component(vit_torch_prefix "${TORCH_INSTALL_PREFIX}" REALPATH)
if(vit_torch_prefix MATCHES "^/usr(/|$)")
  set(CPACK_GENERATOR DEB)
  set(CPACK_PACKAGE_NAME vit)
  set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
  set(CPACK_PACKAGE_CONTACT "vit developers <vit@localhost>")
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
      "Vision Transformers trained from scratch, and the pictures that explain them")
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # vit_<version>_amd64.deb
  set(CPACK_DEBIAN_PACKAGE_SECTION science)
  set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
  # dpkg-shlibdeps names the package of every shared library the binary
  # links (LibTorch, OpenCV, spdlog, fmt, Gloo, oneDNN, ...). LibTorch reaches
  # BLAS through the libblas.so.3 alternative, so the OpenMP OpenBLAS that
  # setup.sh selects is named here, as LibTorch's reference BLAS is far slower.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-openmp")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "dataset-fashion-mnist")
  include(CPack)
endif()
