# LAS reader throughput and the file generator/dumper used by laspy_check.py; run by hand.
# Included from tests/io/CMakeLists.txt: include(${CMAKE_CURRENT_SOURCE_DIR}/las_bench.cmake)
add_executable(las_read_bench ${CMAKE_CURRENT_LIST_DIR}/las_read_bench.cpp)
target_link_libraries(las_read_bench PRIVATE heightgrid_io heightgrid_options)
