#!/usr/bin/env sh
# Create a local CA plus server and client certificates (PKCS#8 keys, as Java expects)
# in conf/tls/certs, for the hosts given (default: 127.0.0.1 and localhost).
#   conf/tls/make-certs.sh [host ...]
set -eu
out="$(dirname "$0")/certs"
args=""
for host in "$@"; do args="$args --host $host"; done
# shellcheck disable=SC2086
exec python3 -m rocketmq_tx.certs "$out" $args
