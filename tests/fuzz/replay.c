/*
 * replay: a main() for fuzz targets built without libFuzzer. Feeds each file named on the
 * command line to LLVMFuzzerTestOneInput once, so the seed corpus runs under ASan+UBSan in
 * `make check`. Exit 0 when every input ran (a crash aborts the process).
 */
#include <stdint.h>
#include <stdio.h>

#include "util/buf.h"
#include "util/fs.h"
#include "util/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    struct buf b = BUF_INIT;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        struct err e = {0};
        buf_reset(&b);
        if (fs_read_file(argv[i], (size_t)64 << 20, &b, &e) < 0) {
            fprintf(stderr, "replay: %s\n", e.msg);
            rc = 1;
            continue;
        }
        LLVMFuzzerTestOneInput((const uint8_t *)b.data, b.len);
    }
    buf_release(&b);
    return rc;
}
