#!/usr/bin/env bash
# Web addresses in the repository, part of the test suite (cmake/test.sh): every http or https
# address in a tracked file (git ls-files) must name a host of the allow-list below, and no
# tracked file may name a package mirror or archive host at all, in an address or not (the
# sources of what the tests install come from the machine's own configuration, never from the
# repository). Fails listing FILE:LINE and the address or host of each violation; on success
# prints "check_urls: N addresses, all allowed". Runs from any directory.
#
#   bash cmake/check_urls.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The hosts an address may name (the host itself or one of its subdomains), each with why.
# Specifications and licences only; never a package mirror or archive (see denied_hosts).
allowed_hosts=(
    example.invalid # CMakeLists.txt's HOMEPAGE_URL: a reserved name (RFC 2606) that never resolves
    nvmexpress.org  # the NVM Express specifications the code and the notes cite
    spdx.org        # licence identifiers and texts
)

# Package mirror and archive hosts (Debian's and Ubuntu's archives, their mirror networks and
# snapshots), as an extended regular expression, matched in any case. Denied even where the
# allow-list would match, and wherever they appear in a tracked file, not only in addresses.
denied_hosts='((deb|snapshot|security|ftp|ftp[.-][a-z]{2}|ftp-master|incoming|archive|mirrors?|cdn|http|httpredir)\.debian\.(org|net)|([a-z]{2}\.)?(archive|security|ports|old-releases)\.ubuntu\.com)'

git rev-parse --is-inside-work-tree >/dev/null 2>&1 \
    || { echo "check_urls: FAILED: $PWD is not a git checkout: cannot list the tracked files" >&2; exit 1; }

# host_of ADDRESS: the host of an http(s) address, lower case (no user, no port)
host_of() {
    local host=${1#*://}
    host=${host%%[/?#]*}
    host=${host##*@}
    host=${host%%:*}
    echo "${host,,}"
}

# allowed HOST: whether HOST is in the allow-list (itself or a subdomain) and not denied
allowed() {
    local entry
    [[ $1 =~ ^$denied_hosts$ ]] && return 1
    for entry in "${allowed_hosts[@]}"; do
        [ "$1" = "$entry" ] && return 0
        [[ $1 == *".$entry" ]] && return 0
    done
    return 1
}

# git_grep ARGS...: git grep over the tracked files (text files only), "FILE:LINE:MATCH" a match;
# no match is no error, a failing git grep is
git_grep() {
    git grep --full-name --no-color -n -I -o "$@" || [ $? -eq 1 ]
}

addresses=0
violations=()
declare -A reported=()

matches=$(git_grep -E 'https?://[^][:space:]"'"'"'<>(){}`|\\^]+')
while IFS= read -r match; do
    [ -n "$match" ] || continue
    [[ $match =~ ^(.*):([0-9]+):(https?://.*)$ ]] \
        || { echo "check_urls: FAILED: cannot parse git grep's '$match'" >&2; exit 1; }
    file=${BASH_REMATCH[1]} line=${BASH_REMATCH[2]} address=${BASH_REMATCH[3]}
    # Sentence punctuation after an address is not part of it.
    while [[ $address == *[.,\;:!?\'] ]]; do address=${address%?}; done
    addresses=$((addresses + 1))
    host=$(host_of "$address")
    if ! allowed "$host"; then
        if [[ $host =~ ^$denied_hosts$ ]]; then
            violations+=("$file:$line: $address (a package mirror or archive: never allowed)")
        else
            violations+=("$file:$line: $address (host $host is not in the allow-list of cmake/check_urls.sh)")
        fi
        reported["$file:$line:$host"]=1
    fi
done <<<"$matches"

# The denied hosts anywhere, with or without a scheme (those in addresses are reported above).
matches=$(git_grep -i -E "$denied_hosts")
while IFS= read -r match; do
    [ -n "$match" ] || continue
    [[ $match =~ ^(.*):([0-9]+):(.*)$ ]] \
        || { echo "check_urls: FAILED: cannot parse git grep's '$match'" >&2; exit 1; }
    file=${BASH_REMATCH[1]} line=${BASH_REMATCH[2]} host=${BASH_REMATCH[3],,}
    [ -z "${reported["$file:$line:$host"]:-}" ] || continue
    violations+=("$file:$line: $host (a package mirror or archive host: never named in the repository)")
    reported["$file:$line:$host"]=1
done <<<"$matches"

if [ ${#violations[@]} -ne 0 ]; then
    printf '%s\n' "${violations[@]}" >&2
    echo "check_urls: FAILED: ${#violations[@]} not allowed ($addresses addresses in the tracked files;" \
        "allow-list and denied hosts at the top of cmake/check_urls.sh)" >&2
    exit 1
fi
echo "check_urls: $addresses addresses, all allowed"
