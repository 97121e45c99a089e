/*
 * decide: the plan's word on one call of a world (docs/world.md, "Effect faults"), shared by
 * the server (serve.c, every tools/call) and the replay (replay.c, every recorded call), so
 * that a replay decides with the same code, the same plan engine behind the seam and the same
 * call numbering as the run did.
 *
 * The call is asked as a call of the world component (CATALOG_INJ_WORLD) with the world's
 * name as server and the world's next call number (world_ncalls + 1) as session_call; the
 * safety rule (seam_mutating_allowed) refuses a mutating fault where no sandbox is known; the
 * world injects effect.timeout_before_effect, effect.timeout_after_effect and
 * effect.duplicate_delivery (WORLD_FAULT_TIMEOUT_* / _DUPLICATE), tool.error, tool.timeout
 * (reply error) and tool.stale_data (WORLD_FAULT_WITHHELD: the fault answers instead of the
 * world; stale_data only with its result option or an earlier answer of the tool), and
 * tool.silent_wrong_data and inject.tool_result (WORLD_FAULT_OTHER: the server changes the
 * world's answer with codec/toolres.h, the shim's code); any other decided fault is refused as
 * unsupported. A refusal is a `warning` event (fault_refused, fault_unsupported,
 * fault_not_applied) on the seam and a log line.
 */
#ifndef FAULTLINE_WORLD_DECIDE_H
#define FAULTLINE_WORLD_DECIDE_H

#include "seam/seam.h"
#include "world/world.h"

/* Decides call c (c->tool and c->args set; borrowed) of w before world_call applies it: sets
 * c->fault, c->mode and c->copies when a fault applies, and fills *d (d->inject 0 when none
 * applies; d->options, when set, is the caller's: json_decref it). s NULL: no fault. Blocks
 * for at most the seam's decision deadline; not callable from a callback. */
void world_decide(struct world *w, struct seam *s, struct world_call *c, struct seam_decision *d);

#endif
