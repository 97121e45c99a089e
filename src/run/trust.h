/*
 * trust: how a sandbox comes to trust the run's interception CA (src/control/intercept.h).
 *
 * The controller writes the bundle (the system's CAs followed by the run's CA certificate) to
 * the repetition's folder as ca-bundle.pem. Inside the sandbox it is bound read-only over each
 * usual system bundle path that exists on the host (Debian's /etc/ssl/certs/ca-certificates.crt
 * first; the OCI backend binds that one alone), and every variable the common clients read for
 * their CA file names it: SSL_CERT_FILE (OpenSSL: curl, git, Python's ssl), NODE_EXTRA_CA_CERTS
 * (node adds it to its own store), REQUESTS_CA_BUNDLE (Python requests), CURL_CA_BUNDLE,
 * GIT_SSL_CAINFO and CODEX_CA_CERTIFICATE (Codex).
 */
#ifndef FAULTLINE_RUN_TRUST_H
#define FAULTLINE_RUN_TRUST_H

#include <stddef.h>

#include "util/buf.h"

/* The bundle's path inside the sandbox. */
#define TRUST_BUNDLE_INSIDE "/etc/ssl/certs/ca-certificates.crt"
/* The bundle's name in the repetition's folder (the controller's --ca-dir). */
#define TRUST_BUNDLE_NAME "ca-bundle.pem"
/* Most pairs trust_binds fills, with the final NULL. */
#define TRUST_BINDS_MAX 8

/* The NULL-terminated names of the variables set to TRUST_BUNDLE_INSIDE. */
extern const char *const trust_env_names[];

/* Fills pairs (host file, path inside; NULL-terminated; TRUST_BINDS_MAX slots) with bundle
 * bound over the system bundle paths: every usual one that exists here (native), or Debian's
 * alone (oci). bundle is borrowed and must outlive pairs. Returns pairs. */
const char *const *trust_binds(const char *bundle, int oci, const char **pairs);
/* Appends the shell line "export NAME=TRUST_BUNDLE_INSIDE ...\n" for trust_env_names. */
void trust_export(struct buf *out);

#endif
