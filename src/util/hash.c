/* hash: see hash.h. hash64 is FNV-1a over 8-byte words finished with splitmix64. */
#include <string.h>

#include <openssl/evp.h>

#include "util/hash.h"
#include "util/banned.h"

uint64_t hash_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t hash64(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ULL ^ hash_mix64(seed);
    uint64_t w;

    while (n >= 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0x100000001b3ULL;
    return hash_mix64(h);
}

void hash_sha256_hex(const void *p, size_t n, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[32];
    unsigned int len = 0;

    EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
    for (unsigned int i = 0; i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[64] = '\0';
}
