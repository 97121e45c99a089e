/*
 * hash: a fast 64-bit mixing hash for deterministic decisions, and SHA-256 for content hashes.
 *
 * hash64 is a fixed function of its input bytes and seed (no per-process randomisation), so
 * the same inputs give the same value in every process, on every run: plan selection depends
 * on that. It is not cryptographic.
 */
#ifndef FAULTLINE_UTIL_HASH_H
#define FAULTLINE_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t hash64(const void *p, size_t n, uint64_t seed);
/* One step of splitmix64: a bijective mix of x. */
uint64_t hash_mix64(uint64_t x);
/* Hex SHA-256 of p[0..n) into out (65 bytes with the NUL). */
void hash_sha256_hex(const void *p, size_t n, char out[65]);

#endif
