# Checks how nvmekit-serve refuses bad numbers and a Namespace Management pool too small:
#   cmake -DPROGRAM=path -DWORK=dir -P serve_options.cmake
# A number out of its range (or not a number), a --timing model or key it does not know, an NQN
# that is none, and options that conflict are usage errors (exit 2, named on stderr);
# namespaces larger than --capacity are a configuration error (exit 1, said on stdout, where the
# server logs), found before the server listens: what passes the parsing ends there (so that a
# check that the parsing accepts something does not start a server).
# A socket that cannot listen is an error (exit 1) naming its address or path.
# `launcher`, when set, runs the program (an environment, another user).
function(expect_failure status_expected pattern)
    execute_process(COMMAND ${launcher} "${PROGRAM}" ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out
                    ERROR_VARIABLE err TIMEOUT 20)
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
# --log takes spdlog's level names, short and long, and refuses others (which spdlog reads as off).
set(log_levels "trace, debug, info, warn \\(or warning\\), err \\(or error\\), critical or off")
expect_failure(2 "--log is ${log_levels}: verbose" --vfio-user "${socket}" --ram 16M --log verbose)
expect_failure(2 "--log is ${log_levels}: INFO" --vfio-user "${socket}" --ram 16M --log INFO)
foreach(level IN ITEMS trace debug info warn warning err error)
    expect_failure(1 "larger than the unallocated NVM capacity"
                   --vfio-user "${socket}" --ram 64M --capacity 32M --log ${level})
endforeach()
foreach(level IN ITEMS critical off) # above the error's level: nothing said
    expect_failure(1 "^$" --vfio-user "${socket}" --ram 64M --capacity 32M --log ${level})
endforeach()
# An NQN is "nqn." then a name (as nvmf_create_subsystem and nvmf_subsystem_add_host require).
expect_failure(2 "--nqn: 'not-an-nqn' is not an NQN" --vfio-user "${socket}" --ram 64M --capacity 32M --nqn not-an-nqn)
expect_failure(2 "--nqn: 'nqn.' is not an NQN" --vfio-user "${socket}" --ram 64M --capacity 32M --nqn nqn.)
expect_failure(2 "--host: 'host1' is not an NQN" --tcp 127.0.0.1:4420 --ram 64M --capacity 32M --host host1)
expect_failure(1 "larger than the unallocated NVM capacity"
               --vfio-user "${socket}" --ram 64M --capacity 32M --nqn nqn.2026-11.io.example:disk0)
# Options that apply to nothing, or name one socket twice.
expect_failure(2 "--direct applies to --file namespaces, and none is given"
               --vfio-user "${socket}" --ram 64M --capacity 32M --direct)
expect_failure(2 "--direct applies to --file namespaces, and none is given" -r "${WORK}/rpc.sock" --direct)
expect_failure(2 "--io uring applies to --file namespaces, and none is given|built without liburing"
               --vfio-user "${socket}" --ram 64M --capacity 32M --io uring)
expect_failure(2 "-r and --vfio-user name the same socket: ${socket}"
               --vfio-user "${socket}" -r "${socket}" --ram 64M --capacity 32M)
expect_failure(2 "-r and --vfio-user name the same socket"
               --vfio-user "${socket}" -r "${WORK}/./serve-options.sock" --ram 64M --capacity 32M)
# A socket that cannot listen names its address or path: TEST-NET-1 (RFC 5737) and the
# documentation prefix 2001:db8::/32 are on no interface; a path in no directory.
expect_failure(1 "tcp: bind 192.0.2.1:4420: " --tcp 192.0.2.1:4420)
expect_failure(1 "tcp: [a-z]+ \\[2001:db8::1\\]:4420: " --tcp [2001:db8::1]:4420)
expect_failure(1 "tcp: bind 192.0.2.1:4420: " --tcp 192.0.2.1:4420 -r "${WORK}/rpc.sock")
if(EXISTS "${WORK}/rpc.sock")
    message(FATAL_ERROR "nvmekit-serve left its management socket behind: ${WORK}/rpc.sock")
endif()
expect_failure(1 "vfio-user: bind ${WORK}/missing/device.sock" --vfio-user "${WORK}/missing/device.sock")
expect_failure(1 "rpc server: bind ${WORK}/missing/rpc.sock" -r "${WORK}/missing/rpc.sock")
# Without -r, the management socket is $XDG_RUNTIME_DIR/nvmekit.sock (XDG_RUNTIME_DIR an absolute
# path of a directory of the user's), or /run/nvmekit.sock for root; another user without a
# runtime directory is told to give -r (never a world-writable directory such as /var/tmp). Run as
# nobody when this runs as root (setpriv).
file(WRITE "${WORK}/empty.json" "{\"subsystems\": []}")
execute_process(COMMAND id -u OUTPUT_VARIABLE user_id OUTPUT_STRIP_TRAILING_WHITESPACE)
set(as_another_user)
if(user_id STREQUAL "0")
    find_program(SETPRIV setpriv)
    if(SETPRIV)
        set(as_another_user "${SETPRIV}" --reuid=65534 --regid=65534 --clear-groups)
    endif()
endif()
if(NOT user_id STREQUAL "0" OR as_another_user)
    set(launcher "${CMAKE_COMMAND}" -E env --unset=XDG_RUNTIME_DIR ${as_another_user})
    expect_failure(2 "no management socket: give -r PATH" -c "${WORK}/empty.json")
    set(launcher "${CMAKE_COMMAND}" -E env XDG_RUNTIME_DIR=relative/run ${as_another_user})
    expect_failure(2 "no management socket: give -r PATH" -c "${WORK}/empty.json")
    set(launcher "${CMAKE_COMMAND}" -E env XDG_RUNTIME_DIR=${WORK}/missing ${as_another_user})
    expect_failure(2 "no management socket: give -r PATH" -c "${WORK}/empty.json")
    set(launcher)
else()
    message(WARNING "serve_options: the default management socket of a user without a runtime directory "
                    "is not checked: this runs as root, and setpriv was not found")
endif()
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
