/*
 * sandbox/oci.h: what oci.c (the oci backend: spawning, killing) and oci_image.c (its two
 * built-in images, made on first use from local files) share. Internal to src/sandbox.
 */
#ifndef FAULTLINE_SANDBOX_OCI_H
#define FAULTLINE_SANDBOX_OCI_H

#include <stddef.h>

#include "util/buf.h"
#include "util/err.h"

/* The -node variant of OCI_DEFAULT_IMAGE (backend.h): its own /usr, with Node.js and npm;
 * `--sandbox-image node` names it. */
#define OCI_NODE_IMAGE "localhost/faultline-sandbox-node:1"
#define OCI_NODE_SHORT "node"
/* The -node image's label naming the libraries of the faultline it was made with (oci_image.c):
 * a faultline that needs others has it made again. */
#define OCI_LIBS_LABEL "faultline.libs"

/* Runs argv (the engine, tar, ldd, dpkg-query) to its end, podman with its CONTAINERS_CONF;
 * returns its exit code (>= 0), or ERR_NOTFOUND (not installed), ERR_TIMEOUT (still running
 * after timeout_ms: killed), ERR_SYS. out: NULL (its output to /dev/null) or where its stdout
 * and stderr go, at most max bytes (the rest is dropped). */
int oci_run_tool(const char *const *argv, struct buf *out, size_t max, int timeout_ms,
                 struct err *e);

/* The image `--sandbox-image image` names: NULL is OCI_DEFAULT_IMAGE, "node" OCI_NODE_IMAGE,
 * anything else itself. Borrowed (image or a constant). */
const char *oci_image_name(const char *image);

struct args;
/* The argument vector importing the tar as image (one of the two built-in ones) with engine
 * eng, into a (strings borrowed); label: NULL or a "LABEL k=v" change. */
void oci_import_argv(struct args *a, const char *eng, const char *tar, const char *image,
                     const char *label);

/* Makes sure the image (a full name, from oci_image_name) is there for engine eng: one of the
 * two built-in images is made when missing (asked of the engine once per process); any other
 * is left to the engine. self_exe: the faultline executable bound inside (NULL: this one),
 * whose libraries the -node image gets so that it runs there. 0, or ERR_* with a one-line
 * reason. Blocking (seconds for the -node image's first build). */
int oci_image_ensure(const char *eng, const char *image, const char *self_exe, struct err *e);

#endif
