#!/usr/bin/env bash
# t0705-agent-tls: the agent over https: a server whose certificate is trusted (through
# SSL_CERT_FILE) answers; one that is not trusted, or names another host, is refused with a
# certificate error naming the server, exit 1.
. "$(dirname "$0")/lib.sh"
. "$FAULTLINE_ROOT/tests/e2e/agent/common.sh"

command -v openssl >/dev/null || { echo "openssl CLI missing"; exit 1; }
cd "$TMP"
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 \
    -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout other-key.pem -out other.pem -days 2 \
    -subj /CN=other -addext "subjectAltName=DNS:other.example" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout name-key.pem -out name.pem -days 2 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost" 2>/dev/null
start_bg "$PYTHON" "$AGENT_DIR/tls_model.py" cert.pem key.pem "$TMP/tls.port"
start_bg "$PYTHON" "$AGENT_DIR/tls_model.py" name.pem name-key.pem "$TMP/name.port"
wait_file 10 "$TMP/tls.port" || echo "the TLS server did not start"
wait_file 10 "$TMP/name.port" || echo "the second TLS server did not start"
PORT=$(cat "$TMP/tls.port") NPORT=$(cat "$TMP/name.port")
export PORT NPORT

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
