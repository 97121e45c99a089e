/*
 * trust: the sandbox's binds and variables for the run's CA bundle (see trust.h).
 */
#include <sys/stat.h>

#include "run/trust.h"
#include "util/banned.h"

const char *const trust_env_names[] = {"SSL_CERT_FILE",
                                       "NODE_EXTRA_CA_CERTS",
                                       "REQUESTS_CA_BUNDLE",
                                       "CURL_CA_BUNDLE",
                                       "GIT_SSL_CAINFO",
                                       "CODEX_CA_CERTIFICATE",
                                       NULL};

/* Where distributions keep the system bundle (Debian/Ubuntu, Fedora/RHEL, Alpine/openSUSE). */
static const char *const system_bundles[] = {TRUST_BUNDLE_INSIDE,
                                             "/etc/pki/tls/certs/ca-bundle.crt",
                                             "/etc/ssl/cert.pem", "/etc/ssl/ca-bundle.pem", NULL};

const char *const *trust_binds(const char *bundle, int oci, const char **pairs)
{
    size_t n = 0;

    for (size_t i = 0; system_bundles[i] && n + 2 < TRUST_BINDS_MAX; i++) {
        struct stat st;
        /* a symlink is left alone: it leads to one of the files bound (or to none) */
        if (!oci && (lstat(system_bundles[i], &st) != 0 || !S_ISREG(st.st_mode)))
            continue;
        pairs[n++] = bundle;
        pairs[n++] = system_bundles[i];
        if (oci)
            break;
    }
    pairs[n] = NULL;
    return pairs;
}

void trust_export(struct buf *out)
{
    buf_adds(out, "export");
    for (size_t i = 0; trust_env_names[i]; i++)
        buf_addf(out, " %s=" TRUST_BUNDLE_INSIDE, trust_env_names[i]);
    buf_adds(out, "\n");
}
