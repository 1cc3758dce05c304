/* sha256.h — SHA-256 (FIPS 180-4) for model provenance in engine files. */
#ifndef PARITY_SHA256_H
#define PARITY_SHA256_H

#include <stddef.h>
#include <stdint.h>

void sha256(const void *data, size_t n, uint8_t out[32]);
/* Lower-case hex of the digest into hex[65]. */
void sha256_hex(const void *data, size_t n, char hex[65]);

#endif
