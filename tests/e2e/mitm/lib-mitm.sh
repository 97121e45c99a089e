# tests/e2e/mitm/lib-mitm.sh: the interception tests' stand-ins; source it after lib.sh.
MITM_HELPERS="$FAULTLINE_ROOT/tests/e2e/mitm"
export MITM_HELPERS

# mitm_test_ca DIR: a test CA (DIR/test-ca.pem) and a server certificate signed by it for
# api.github.com, code.example.test, git.example.test and bare.example.test (DIR/srv.pem, DIR/srv.key): the "real" hosts' side.
mitm_test_ca() {
    local d=$1
    mkdir -p "$d"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -keyout "$d/test-ca.key" -out "$d/test-ca.pem" -subj "/CN=faultline test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" \
        2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$d/srv.key" \
        -out "$d/srv.csr" -subj "/CN=api.github.com" 2>/dev/null
    printf 'subjectAltName=DNS:api.github.com,DNS:code.example.test,DNS:git.example.test,DNS:bare.example.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$d/srv.ext"
    openssl x509 -req -in "$d/srv.csr" -CA "$d/test-ca.pem" -CAkey "$d/test-ca.key" \
        -CAcreateserial -days 2 -out "$d/srv.pem" -extfile "$d/srv.ext" 2>/dev/null
}

# mitm_start_api DIR: the code-hosting API stand-in (api.py) with DIR's certificate; sets and
# exports API_PORT, API_LOG (one "METHOD PATH" line per request it answered).
mitm_start_api() {
    local d=$1
    API_LOG="$d/api.log"
    : >"$API_LOG"
    rm -f "$d/api.port"
    start_bg python3 "$MITM_HELPERS/api.py" "$d/srv.pem" "$d/srv.key" "$d/api.port" "$API_LOG"
    wait_file 10 "$d/api.port" || { echo "the API stand-in did not start"; return 1; }
    API_PORT=$(cat "$d/api.port")
    export API_PORT API_LOG
}
