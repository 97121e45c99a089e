/*
 * fuzz_sni: the ClientHello reader of the transparent TLS listener (codec/sni.h) on untrusted
 * bytes: the input is what a client inside the sandbox sends first on 127.0.0.1:443.
 *
 * Invariants (abort on violation):
 * - sni_record_need asks for at least 5 bytes and at most 5 + SNI_RECORD_MAX, or refuses with
 *   ERR_PARSE and a message.
 * - sni_parse returns 0, ERR_NOTFOUND, ERR_PARSE or ERR_UNSUPPORTED, a message with each
 *   refusal; a name found is 1..SNI_HOST_MAX bytes of [a-z0-9._-] with no final dot.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/sni.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char host[SNI_HOST_MAX + 1];
    struct err e = {0};
    size_t need = 0, len;
    int rc = sni_record_need(data, size, &need, &e);

    if (rc != 0) {
        CHECK(rc == ERR_PARSE && e.msg[0]);
    } else {
        CHECK(need >= 5 && need <= 5 + SNI_RECORD_MAX);
    }
    memset(&e, 0, sizeof(e));
    rc = sni_parse(data, size, host, &e);
    if (rc != 0) {
        CHECK((rc == ERR_NOTFOUND || rc == ERR_PARSE || rc == ERR_UNSUPPORTED) && e.msg[0]);
        return 0;
    }
    len = strlen(host);
    CHECK(len >= 1 && len <= SNI_HOST_MAX && host[len - 1] != '.');
    for (size_t i = 0; i < len; i++) {
        char c = host[i];
        CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '_');
    }
    return 0;
}
