# The fuzz harnesses without libFuzzer (replay_main.cpp), in every build: CTest replays the
# committed corpus of each target and its regression inputs (inputs that once failed, kept in
# regressions/<target>/), so a build without clang still checks them. Included by tests/.
set(heightgrid_fuzz_dir ${PROJECT_SOURCE_DIR}/tests/fuzz)

# heightgrid_fuzz_replay(TARGET SOURCE LIBS...): <TARGET>_replay and the test fuzz_replay.<TARGET>.
function(heightgrid_fuzz_replay target source)
  add_executable(${target}_replay ${heightgrid_fuzz_dir}/${source} ${heightgrid_fuzz_dir}/replay_main.cpp)
  target_link_libraries(${target}_replay PRIVATE ${ARGN} heightgrid_options)
  set(inputs "")
  foreach(dir corpus regressions)
    if(IS_DIRECTORY ${heightgrid_fuzz_dir}/${dir}/${target})
      list(APPEND inputs ${heightgrid_fuzz_dir}/${dir}/${target})
    endif()
  endforeach()
  add_test(NAME fuzz_replay.${target} COMMAND ${target}_replay ${inputs})
  set_tests_properties(fuzz_replay.${target} PROPERTIES ENVIRONMENT "${HEIGHTGRID_TEST_ENV}")
endfunction()

heightgrid_fuzz_replay(las_file_fuzz las_file_fuzz.cpp heightgrid_io)
heightgrid_fuzz_replay(laz_file_fuzz las_file_fuzz.cpp heightgrid_io)
heightgrid_fuzz_replay(xyz_fuzz xyz_fuzz.cpp heightgrid_io)
heightgrid_fuzz_replay(options_fuzz options_fuzz.cpp heightgrid_app)
