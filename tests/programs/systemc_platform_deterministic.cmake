# Runs the SystemC virtual platform twice with one seed and checks that both runs print the same
# simulated results and trace digest (every line but the wall-clock one); MODE (optional) is an
# option both runs get, such as --at:
#   cmake -DPROGRAM=path [-DMODE=--at] -P systemc_platform_deterministic.cmake
foreach(run IN ITEMS 1 2)
    execute_process(COMMAND "${PROGRAM}" --commands 1000 --seed 42 --queue-depth 8 ${MODE}
                    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT status EQUAL 0)
        message(FATAL_ERROR "run ${run}: exit ${status}, stdout '${out}', stderr '${err}'")
    endif()
    string(REGEX REPLACE "wall clock:[^\n]*\n" "" out_${run} "${out}")
endforeach()
if(NOT out_1 STREQUAL out_2)
    message(FATAL_ERROR "two runs with seed 42 differ:\n${out_1}\n---\n${out_2}")
endif()
if(NOT out_1 MATCHES "trace digest [0-9a-f]+")
    message(FATAL_ERROR "no trace digest in '${out_1}'")
endif()
