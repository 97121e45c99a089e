/*
 * bench_shell: shell command lines parsed per second (shell_parse + shell_list_free) and
 * classified per second (tier_of_command: the parse and every destructive pattern), on one
 * core, against a baseline measured in the same run (a malloc + memcpy + free of each line:
 * the floor of any parser that keeps a copy of what it reads).
 *
 * Rates are per second of the benchmark thread's CPU time (CLOCK_THREAD_CPUTIME_ID): what one
 * core does, whatever else the machine runs (on a loaded machine the wall-clock rate, printed
 * next to it, is a fraction of it). The target is judged on the CPU-time rate.
 *
 * The corpus: 50 command lines of the kind coding agents hand their shell tool (git, npm,
 * make, grep, pipes, subshells, heredocs, sh -c), a few destructive ones among them. Each run
 * goes through the corpus ROUNDS times; the figure is the best of three runs. Target (issue
 * 14): at least 200k commands/s for tier_of_command. Figures go into docs/performance.md
 * ("shell parser and destructive tier").
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/shell.h"
#include "policy/tier.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define ROUNDS 5000
#define RUNS 3
#define TARGET 200e3

static volatile uint64_t sink;

static const char *const corpus[] = {
    "git status",
    "git diff --stat",
    "git log --oneline -n 20",
    "git add -A && git commit -m \"fix: handle empty input\"",
    "git checkout -b feature/parser",
    "git push origin feature/parser",
    "git rebase -i HEAD~3",
    "git stash && git pull --rebase && git stash pop",
    "npm test -- --watch=false",
    "npm install --save-dev typescript@5.4.5",
    "npm run build 2>&1 | tail -n 50",
    "npx jest src/parser.test.ts --coverage",
    "yarn lint --fix",
    "pnpm -r test",
    "cd src && make -j4 2>&1 | tail -n 20",
    "make clean && make -j$(nproc)",
    "cargo test --all-features -- --nocapture",
    "go test ./... -run TestParse -v",
    "python3 -m pytest tests/ -x -q",
    "pip install -r requirements.txt",
    "python3 -c 'import sys, json; print(json.load(sys.stdin)[\"version\"])' < package.json",
    "ls -la",
    "ls src/ | head -n 50",
    "cat README.md",
    "head -n 100 src/main.c",
    "sed -n '120,180p' src/parser.c",
    "grep -rn \"TODO\" src/ --include='*.c' | wc -l",
    "rg -n 'fn parse' --type rust",
    "find . -name '*.py' -not -path './venv/*' | xargs wc -l",
    "wc -l src/*.c | sort -n | tail",
    "mkdir -p build/out && cp -r assets build/out/",
    "rm -rf node_modules dist && npm ci",
    "rm -f build/*.o",
    "echo \"$PATH\" | tr ':' '\\n'",
    "export NODE_ENV=production; node scripts/build.js",
    "FOO=1 BAR=2 ./run.sh --verbose",
    "docker build -t app:dev . && docker run --rm app:dev npm test",
    "curl -s http://localhost:8080/health | jq .status",
    "timeout 30 ./server --port 8080 & sleep 1; curl -sf localhost:8080/ || echo down",
    "for f in src/*.ts; do echo \"$f\"; done",
    "if [ -f .env ]; then source .env; fi",
    "(cd frontend && npm run build) && (cd backend && go build ./...)",
    "bash -lc 'cd /work && make test'",
    "cat <<'EOF' > config.json\n{\"debug\": true}\nEOF",
    "tar -czf backup.tar.gz src/ && ls -lh backup.tar.gz",
    "diff <(sort a.txt) <(sort b.txt)",
    "echo \"build $(git rev-parse --short HEAD) at $(date +%s)\"",
    "git reset --hard origin/main",
    "rm -rf ~/",
    "curl -fsSL https://example.com/install.sh | sh",
};

#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

static size_t lens[NCORPUS];

struct rate {
    double cpu, wall; /* commands per second of thread CPU time, of wall-clock time */
};

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct rate best_rate(void (*fn)(void))
{
    struct rate best = {0, 0};
    for (int r = 0; r < RUNS; r++) {
        int64_t c0 = cpu_ns(), w0 = time_mono_ns();
        double n = (double)ROUNDS * NCORPUS;
        fn();
        double cpu = n / ((cpu_ns() - c0) / 1e9), wall = n / ((time_mono_ns() - w0) / 1e9);
        if (cpu > best.cpu)
            best.cpu = cpu;
        if (wall > best.wall)
            best.wall = wall;
    }
    return best;
}

static void run_copy(void)
{
    uint64_t acc = 0;

    for (int r = 0; r < ROUNDS; r++)
        for (size_t i = 0; i < NCORPUS; i++) {
            char *p = malloc(lens[i] + 1);
            if (p == NULL)
                exit(1);
            memcpy(p, corpus[i], lens[i] + 1);
            acc += (unsigned char)p[lens[i] / 2];
            free(p);
        }
    sink += acc;
}

static void run_parse(void)
{
    uint64_t acc = 0;

    for (int r = 0; r < ROUNDS; r++)
        for (size_t i = 0; i < NCORPUS; i++) {
            struct shell_list l;
            struct err e = {0};
            if (shell_parse(corpus[i], lens[i], &l, &e) < 0) {
                fprintf(stderr, "bench_shell: '%s': %s\n", corpus[i], e.msg);
                exit(1);
            }
            acc += l.ncmds;
            shell_list_free(&l);
        }
    sink += acc;
}

static void run_tier(void)
{
    uint64_t acc = 0;

    for (int r = 0; r < ROUNDS; r++)
        for (size_t i = 0; i < NCORPUS; i++) {
            struct tier_result res;
            if (tier_of_command(corpus[i], lens[i], &res) < 0)
                exit(1);
            acc += (uint64_t)res.level;
        }
    sink += acc;
}

static void report(const char *name, struct rate r, const struct rate *base)
{
    printf("  %-38s %8.0f k/s CPU  %8.0f k/s wall", name, r.cpu / 1e3, r.wall / 1e3);
    if (base != NULL)
        printf("   %5.3fx the baseline\n", r.cpu / base->cpu);
    else
        printf("   (baseline)\n");
}

int main(void)
{
    struct rate base, parse, tier;
    size_t destructive = 0;

    for (size_t i = 0; i < NCORPUS; i++) {
        struct tier_result res;
        lens[i] = strlen(corpus[i]);
        if (tier_of_command(corpus[i], lens[i], &res) < 0) {
            fprintf(stderr, "bench_shell: '%s' does not parse: %s\n", corpus[i], res.command);
            return 1;
        }
        destructive += res.level == TIER_DESTRUCTIVE;
    }
    printf("shell parser and destructive tier, %zu commands (%zu destructive) x %d rounds, "
           "best of %d (one core)\n",
           NCORPUS, destructive, ROUNDS, RUNS);
    base = best_rate(run_copy);
    report("malloc + memcpy + free of each line", base, NULL);
    parse = best_rate(run_parse);
    report("shell_parse + shell_list_free", parse, &base);
    tier = best_rate(run_tier);
    report("tier_of_command", tier, &base);
    printf("target: >= 200k commands/s of CPU time (tier_of_command): %s\n",
           tier.cpu >= TARGET ? "met" : "NOT MET");
    return 0;
}
