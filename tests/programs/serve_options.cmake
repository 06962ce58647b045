# Checks how nvmekit-serve refuses bad numbers and a Namespace Management pool too small:
#   cmake -DPROGRAM=path -DWORK=dir -P serve_options.cmake
# A number out of its range (or not a number), and a --timing model or key it does not know, is a
# usage error (exit 2, named on stderr);
# namespaces larger than --capacity are a configuration error (exit 1, said on stdout, where the
# server logs), found before the server listens.
function(expect_failure status_expected pattern)
    execute_process(COMMAND "${PROGRAM}" ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err
                    TIMEOUT 20)
    if(NOT status EQUAL ${status_expected} OR NOT "${out}${err}" MATCHES "${pattern}")
        message(FATAL_ERROR "nvmekit-serve ${ARGN}: expected exit ${status_expected} and '${pattern}', "
                            "got exit ${status}, stdout '${out}', stderr '${err}'")
    endif()
endfunction()
file(MAKE_DIRECTORY "${WORK}")
set(socket "${WORK}/serve-options.sock")
expect_failure(2 "--max-namespaces: not a number from 1 to 1024: 0" --vfio-user "${socket}" --max-namespaces 0)
expect_failure(2 "--max-namespaces: not a number from 1 to 1024: 1025" --vfio-user "${socket}" --max-namespaces 1025)
expect_failure(2 "--queues: not a number from 1 to 64: abc" --vfio-user "${socket}" --queues abc)
expect_failure(2 "--mdts: not a number from 1 to 5: 6" --vfio-user "${socket}" --mdts 6)
expect_failure(2 "--cntlid: not a number from 1 to 65519: 65520" --vfio-user "${socket}" --cntlid 65520)
expect_failure(2 "--max-namespaces 1 is below the 2 namespaces given"
               --vfio-user "${socket}" --ram 16M --ram 16M --max-namespaces 1)
expect_failure(2 "--io is psync or uring: aio" --vfio-user "${socket}" --io aio)
# --timing MODEL[:KEY=VALUE,...]: the model, each key and each value checked.
expect_failure(2 "--timing is simple or ssd, then :KEY=VALUE,... if any: femu" --vfio-user "${socket}" --timing femu)
expect_failure(2 "--timing ssd: unknown key speed" --vfio-user "${socket}" --timing ssd:speed=1)
expect_failure(2 "--timing simple: unknown key channels" --vfio-user "${socket}" --timing simple:channels=8)
expect_failure(2 "--timing ssd channels: not a number from 1 to 256: 0" --vfio-user "${socket}" --timing ssd:channels=0)
expect_failure(2 "--timing ssd read-us: not a number from 0 to 1000000000: 4x"
               --vfio-user "${socket}" --timing ssd:luns=4,read-us=4x)
expect_failure(2 "--timing simple read-us: not a number from 0 to 1000000000: -80"
               --vfio-user "${socket}" --timing simple:read-us=-80)
expect_failure(2 "--timing simple parallelism: not a number from 1 to 65536: 0"
               --vfio-user "${socket}" --timing simple:parallelism=0)
expect_failure(2 "--timing simple: not KEY=VALUE: 'write-us'" --vfio-user "${socket}" --timing simple:write-us)
expect_failure(2 "--timing simple: not KEY=VALUE: ''" --vfio-user "${socket}" --timing simple:read-us=80,)
expect_failure(2 "--timing ssd write-buffer: not a size: 64Q" --vfio-user "${socket}" --timing ssd:write-buffer=64Q)
expect_failure(2 "--timing ssd:write-buffer=1K: ssd_model: the write buffer must hold at least one page"
               --vfio-user "${socket}" --timing ssd:write-buffer=1K)
expect_failure(2 "--group-threads: timed requests complete on the server's thread"
               --vfio-user "${socket}" --group-threads --timing ssd)
# Good values pass the parsing: the configuration error that follows is the capacity's.
expect_failure(1 "larger than the unallocated NVM capacity" --vfio-user "${socket}" --ram 64M --capacity 32M
               --timing ssd:channels=16,luns=4,planes=2,read-us=50,program-us=500,erase-us=3000,write-buffer=64M,host-bytes-per-second=3200000000)
expect_failure(1 "larger than the unallocated NVM capacity" --vfio-user "${socket}" --ram 64M --capacity 32M
               --timing simple:read-us=80,write-us=20,flush-us=0,other-us=5,bytes-per-second=2000000000,parallelism=16,max-outstanding=1024)
expect_failure(1 "larger than the unallocated NVM capacity" --vfio-user "${socket}" --ram 64M --capacity 32M)
expect_failure(2 "--vfio-user SOCKET or --tcp ADDR:PORT .*is required" --ram 16M)
expect_failure(2 "--tcp is ADDR:PORT: 127.0.0.1" --tcp 127.0.0.1)
expect_failure(2 "--tcp port: not a number from 1 to 65535: 70000" --tcp 127.0.0.1:70000)
expect_failure(1 "not an IPv4 or IPv6 address: no-such-address" --tcp no-such-address:4420)
expect_failure(2 "--log is trace, debug, info, warning, error, critical or off: verbose"
               --vfio-user "${socket}" --ram 16M --log verbose)
expect_failure(2 "--log is trace, debug, info, warning, error, critical or off: INFO"
               --vfio-user "${socket}" --ram 16M --log INFO)
# --vfio-user never removes what is at its path: a file there is refused and kept whole.
set(image "${WORK}/disk.img")
file(WRITE "${image}" "a disk image")
expect_failure(1 "exists and is not a socket" --vfio-user "${image}" --ram 16M)
file(READ "${image}" kept)
if(NOT kept STREQUAL "a disk image")
    message(FATAL_ERROR "nvmekit-serve --vfio-user ${image} changed the file at its path")
endif()
if(EXISTS "${socket}")
    message(FATAL_ERROR "nvmekit-serve listened although its configuration was refused: ${socket}")
endif()
