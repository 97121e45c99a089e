/* Unit tests for src/agent/agent: the provider (API, base URL, key, model) resolved from the
 * flags and the environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "util/banned.h"

static const char *const vars[] = {
    "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL",
    "OPENAI_BASE_URL",    "OPENAI_API_KEY",    "OPENAI_MODEL",
};

static int clear_env(void **state)
{
    for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++)
        unsetenv(vars[k]);
    return 0;
}

/* o with defaults and the given flags resolved; asserts it succeeds. */
static void resolve(struct agent_opts *o, const char *api, const char *base_url, const char *model)
{
    struct err e = {0};

    agent_opts_defaults(o);
    o->base_url = base_url;
    o->model = model;
    assert_int_equal(agent_resolve_provider(o, api, &e), 0);
}

static void test_defaults(void **state)
{
    struct agent_opts o;

    resolve(&o, NULL, NULL, NULL);
    assert_int_equal(o.api, LLM_API_ANTHROPIC);
    assert_null(o.base_url);
    assert_null(o.api_key);
    assert_int_equal(o.bearer, 0);
    assert_string_equal(o.model, AGENT_MODEL_ANTHROPIC);

    resolve(&o, "openai", NULL, NULL);
    assert_int_equal(o.api, LLM_API_CHAT);
    assert_string_equal(o.model, AGENT_MODEL_OPENAI);
    resolve(&o, "responses", NULL, NULL);
    assert_int_equal(o.api, LLM_API_RESPONSES);
    assert_string_equal(o.model, AGENT_MODEL_OPENAI);
}

static void test_anthropic_env(void **state)
{
    struct agent_opts o;

    setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/a", 1);
    setenv("ANTHROPIC_AUTH_TOKEN", "tok-123", 1);
    setenv("ANTHROPIC_MODEL", "claude-x", 1);
    setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/o", 1); /* both set: anthropic */
    setenv("OPENAI_API_KEY", "sk-o", 1);
    resolve(&o, NULL, NULL, NULL);
    assert_int_equal(o.api, LLM_API_ANTHROPIC);
    assert_string_equal(o.base_url, "http://127.0.0.1:1/a");
    assert_string_equal(o.api_key, "tok-123");
    assert_int_equal(o.bearer, 1); /* only the auth token: sent as Bearer */
    assert_string_equal(o.model, "claude-x");

    setenv("ANTHROPIC_API_KEY", "sk-a", 1); /* the API key wins over the auth token */
    resolve(&o, NULL, NULL, NULL);
    assert_string_equal(o.api_key, "sk-a");
    assert_int_equal(o.bearer, 0);

    /* flags win over the environment */
    resolve(&o, "anthropic", "http://127.0.0.1:2/", "claude-flag");
    assert_string_equal(o.base_url, "http://127.0.0.1:2/");
    assert_string_equal(o.model, "claude-flag");
    assert_string_equal(o.api_key, "sk-a");
}

static void test_openai_env(void **state)
{
    struct agent_opts o;

    setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/o", 1); /* only OpenAI's: chat */
    setenv("OPENAI_API_KEY", "sk-o", 1);
    setenv("OPENAI_MODEL", "gpt-x", 1);
    setenv("ANTHROPIC_API_KEY", "sk-a", 1);
    setenv("ANTHROPIC_BASE_URL", "", 1); /* empty counts as unset */
    resolve(&o, NULL, NULL, NULL);
    assert_int_equal(o.api, LLM_API_CHAT);
    assert_string_equal(o.base_url, "http://127.0.0.1:1/o");
    assert_string_equal(o.api_key, "sk-o");
    assert_int_equal(o.bearer, 0);
    assert_string_equal(o.model, "gpt-x");

    /* --api anthropic with only OpenAI's URL: Anthropic's variables, its default model */
    resolve(&o, "anthropic", NULL, NULL);
    assert_int_equal(o.api, LLM_API_ANTHROPIC);
    assert_null(o.base_url);
    assert_string_equal(o.api_key, "sk-a");
    assert_string_equal(o.model, AGENT_MODEL_ANTHROPIC);
}

static void test_bad_api(void **state)
{
    struct agent_opts o;
    struct err e = {0};

    agent_opts_defaults(&o);
    assert_int_equal(agent_resolve_provider(&o, "gemini", &e), ERR_INVALID);
    assert_non_null(strstr(e.msg, "--api"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_anthropic_env, clear_env),
        cmocka_unit_test_setup(test_openai_env, clear_env),
        cmocka_unit_test_setup(test_bad_api, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
