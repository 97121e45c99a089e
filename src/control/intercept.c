/*
 * intercept: TLS interception of the egress hosts a fault targets (see intercept.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/tlsmint.h"
#include "control/ctl.h"
#include "control/intercept.h"
#include "util/buf.h"
#include "util/banned.h"

struct intercept {
    struct ctl *ctl;
    struct tlsmint *mint;
};

struct intercept *intercept_new(struct ctl *ctl, struct err *e)
{
    struct intercept *ic = xcalloc(1, sizeof(*ic));
    char path[4096];

    ic->ctl = ctl;
    ic->mint = tlsmint_new(plan_run_id(ctl->plan), e);
    if (ic->mint == NULL)
        goto fail;
    if (ctl->cfg.ca_dir) {
        snprintf(path, sizeof(path), "%s/ca.pem", ctl->cfg.ca_dir);
        if (tlsmint_write_ca(ic->mint, path, e) < 0)
            goto fail;
        snprintf(path, sizeof(path), "%s/ca-bundle.pem", ctl->cfg.ca_dir);
        if (tlsmint_write_bundle(ic->mint, NULL, path, e) < 0)
            goto fail;
    }
    return ic;
fail:
    intercept_free(ic);
    return NULL;
}

void intercept_stop(struct intercept *ic)
{
    (void)ic;
}

void intercept_free(struct intercept *ic)
{
    if (ic == NULL)
        return;
    tlsmint_free(ic->mint);
    free(ic);
}

int intercept_wanted(struct ctl *ctl, const char *host)
{
    size_t n = plan_nfaults(ctl->plan);

    for (size_t i = 0; i < n; i++) {
        const char *pat = plan_fault_host(ctl->plan, i);
        if (strcmp(plan_fault_kind(ctl->plan, i), "egress.credential_401") == 0 && pat &&
            plan_match_pattern(pat, host))
            return 1;
    }
    return 0;
}

int intercept_start(struct ctl *ctl, struct bufferevent *client, const char *host, int port,
                    struct err *err)
{
    (void)client;
    (void)host;
    (void)port;
    if (ctl->icpt == NULL)
        return err_set(err, ERR_UNSUPPORTED, "the controller does not intercept TLS");
    return err_set(err, ERR_UNSUPPORTED, "interception is not implemented yet");
}
