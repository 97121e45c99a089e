#!/usr/bin/env bash
# t0705-agent-tls: the agent over https: a server whose certificate is trusted (through
# SSL_CERT_FILE) answers; one that is not trusted, or names another host, is refused with a
# certificate error naming the server, exit 1.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

tls_servers
cd "$TMP"

test_expect "a trusted certificate: the answer comes over TLS (IP and name)" '
    SSL_CERT_FILE=cert.pem agent anthropic "https://127.0.0.1:$PORT" --retries 0 --prompt hi >out 2>err
    test "$(tail -n 1 out)" = "hello over TLS to 127.0.0.1:$PORT"
    SSL_CERT_FILE=cert.pem agent anthropic "https://localhost:$PORT" --retries 0 --prompt hi >out 2>err
    test "$(tail -n 1 out)" = "hello over TLS to localhost:$PORT"
'

test_expect "an untrusted certificate is refused" '
    set +e; SSL_CERT_FILE=other.pem agent anthropic "https://localhost:$PORT" --retries 0 --prompt hi >out 2>err; rc=$?; set -e
    cat out
    test $rc = 1
    grep -q "^\[error\] model API: TLS handshake with localhost:$PORT: certificate: self-signed certificate" out
'

test_expect "a trusted certificate for another name is refused" '
    SSL_CERT_FILE=name.pem agent anthropic "https://localhost:$NPORT" --retries 0 --prompt hi >out 2>err
    set +e; SSL_CERT_FILE=name.pem agent anthropic "https://127.0.0.1:$NPORT" --retries 0 --prompt hi >out 2>err; rc=$?; set -e
    cat out
    test $rc = 1
    grep -q "^\[error\] model API: TLS handshake with 127.0.0.1:$NPORT: certificate: IP address mismatch" out
'

test_expect "plain http to a TLS port fails cleanly" '
    set +e; agent anthropic "http://127.0.0.1:$PORT" --retries 0 --read-timeout 2 --prompt hi >out 2>err; rc=$?; set -e
    test $rc = 1
    grep -q "^\[error\] model API: " out
'
test_done
