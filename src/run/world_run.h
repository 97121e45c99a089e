/*
 * world_run: what the runner does for an experiment with a `world:` (docs/world.md). Before
 * the agent starts, the world's normal form goes into the repetition's sandbox home as
 * world.json and the MCP configuration gets one more server, `faultline world` on that file
 * with its ledger beside it (behind no shim: the world injects its own faults and asks the
 * controller, FAULTLINE_CONTROL_URL, like the shim). After the repetition, the ledger the world
 * wrote is copied into the repetition's folder as ledger.json (read beneath the home without
 * following links: the sandbox could have planted one), with world-hash.json beside it
 * (run/replay.h: what `faultline replay` checks the folder against).
 */
#ifndef FAULTLINE_RUN_WORLD_RUN_H
#define FAULTLINE_RUN_WORLD_RUN_H

#include <jansson.h>

#include "sandbox/sandbox.h"
#include "util/err.h"

/* Where the world's file and its ledger are inside the sandbox (FAULTLINE_WORLD and
 * FAULTLINE_LEDGER in the agent's environment). */
#define WORLD_RUN_FILE SANDBOX_HOME "/world.json"
#define WORLD_RUN_LEDGER SANDBOX_HOME "/ledger.json"

/* The most bytes of a ledger copied back (the scorer's limit). */
#define WORLD_RUN_LEDGER_MAX ((size_t)64 << 20)

/* Writes home/world.json from world (borrowed: experiment->world) and adds the world's entry,
 * named after the world, to servers (the "mcpServers" object of the MCP configuration). 0 or
 * ERR_IO; ERR_INVALID when servers already has that name. */
int world_run_config(const json_t *world, const char *home, json_t *servers, struct err *e);

/* Copies home/ledger.json to repdir/ledger.json (atomically), then records the digest a replay
 * checks (repdir/world-hash.json, replay_record). 0 (also when the world wrote no ledger:
 * *copied says 0), ERR_IO, ERR_INVALID or ERR_LIMIT. */
int world_run_collect(const char *home, const char *repdir, int *copied, struct err *e);

#endif
