/*
 * File and buffer helpers shared by the C test programs (capi_test.c, aot_driver.c).
 */
#ifndef RELAYOUT_TEST_IO_H
#define RELAYOUT_TEST_IO_H

#include <stdio.h>
#include <stdlib.h>

/* Reads a whole file; *len receives its length. NULL on failure. */
static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int write_file(const char *path, const unsigned char *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t written = len ? fwrite(buf, 1, len, f) : 0;
    fclose(f);
    return written == len ? 0 : -1;
}

/* An output buffer that starts as garbage with no zero byte, so that a kernel that forgets to
 * write a byte is caught. */
static unsigned char *garbage(size_t len) {
    unsigned char *buf = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)((0x5b ^ (i * 0x3d)) | 1);
    return buf;
}

#endif
