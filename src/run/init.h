/*
 * init: `faultline init` writes a first experiment and its mock-model script into a project,
 * so that a new user's first run is two commands (init, then run), offline.
 *
 * The experiment runs the chosen agent (Claude Code, Codex or faultline's reference agent) on a
 * small task (write hello.txt) with one fault of the catalog, its options written out with
 * their defaults and documentation as comments; the mock script drives the agent's own tools
 * (Bash, exec_command, shell, or the MCP filesystem server's write_file) and reports a failure
 * truthfully, echoing the canary. Both are validated before they are written, and nothing is
 * ever overwritten.
 */
#ifndef FAULTLINE_RUN_INIT_H
#define FAULTLINE_RUN_INIT_H

#include "util/buf.h"
#include "util/err.h"

enum init_agent { INIT_AGENT_CLAUDE_CODE, INIT_AGENT_CODEX, INIT_AGENT_REFERENCE };

/* "claude-code", "codex", "reference" -> *out. 0 or ERR_INVALID. */
int init_agent_from_name(const char *name, enum init_agent *out);

/* The experiment and mock-script texts for agent and fault (a catalog id), into exp and
 * script; model_file is the name the experiment gives the script (relative to it). ERR_INVALID
 * with the reason when the pair is not one init writes (a fault of a boundary the agent does
 * not reach offline). The texts validate (a unit test checks every pair). */
int init_render(enum init_agent agent, const char *fault, const char *model_file, struct buf *exp,
                struct buf *script, struct err *e);

/* Writes dir/<fault>.yaml and dir/<fault>.model.yaml (dir made when missing), never replacing
 * a file: ERR_INVALID naming the one that exists, and then nothing is written. The paths
 * written go into written (one a line). */
int init_write(const char *dir, enum init_agent agent, const char *fault, struct buf *written,
               struct err *e);

#endif
