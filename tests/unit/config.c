/* config.c (test) — the YAML config library: parsing with positions, broken
 * inputs (tabs, unterminated quotes, duplicate keys, several documents),
 * typed getters and their error lines, --set overrides, unknown-key check,
 * JSON serialisation. */
#include <string.h>
#include <stdlib.h>
#include "tap.h"
#include "config/config.h"

static config_t *parse(const char *text, perr_t *e)
{
    memset(e, 0, sizeof *e);
    return config_parse(text, strlen(text), "x.yaml", e);
}

/* Parses text expecting failure; the message must contain want. */
static void parse_fails(const char *text, const char *want, const char *name)
{
    perr_t e;
    config_t *c = parse(text, &e);
    ok(!c && e.code == EXIT_BADINPUT && strstr(e.msg, want), "%s: %s", name, e.msg);
    config_free(c);
}

static void test_broken(void)
{
    parse_fails("a: 1\n\tb: 2\n", "x.yaml:2:", "tab indentation");
    parse_fails("a: \"abc\nb: 2\n", "x.yaml:", "unterminated double quote");
    parse_fails("a: 'abc\n", "while scanning a quoted scalar", "unterminated single quote");
    parse_fails("a: 1\nb: 2\na: 3\n", "x.yaml:3:1: duplicate key 'a' (first at line 1)",
                "duplicate key");
    parse_fails("r:\n  s: 1\n  s: 2\n", "x.yaml:3:3: duplicate key 's'", "nested duplicate");
    parse_fails("a: [1, 2\n", "x.yaml:", "unterminated flow sequence");
    parse_fails("- 1\n- 2\n", "top level must be a mapping", "sequence at top");
    parse_fails("a: 1\n---\nb: 2\n", "more than one YAML document", "two documents");
    parse_fails("a: &x 1\nb: *x\n", "x.yaml:2:4: aliases", "alias");
    parse_fails("a: b: c\n", "x.yaml:1:5:", "mapping values not allowed");
    parse_fails("a: \xff\xfe\n", "x.yaml", "invalid UTF-8");
    char deep[400] = "a: ";
    for (int i = 0; i < 100; i++)
        strcat(deep, "[");
    parse_fails(deep, "nesting deeper", "deep nesting refused");
}

static void test_positions_and_types(void)
{
    const char *y =
        "input:\n"
        "  name: images\n"
        "resize:\n"
        "  size: 640x480\n"
        "  method: pillow-bilinear\n"
        "scale: 0.00392156862745098\n"
        "mean: [0.485, 0.456, 0.406]\n"
        "count: 12\n"
        "flag: true\n"
        "quoted: \"12\"\n"
        "bad_size: abc\n"
        "empty:\n";
    perr_t e;
    config_t *c = parse(y, &e);
    ok(c != NULL, "parses a valid config");
    if (!c)
        return;
    const char *s = NULL;
    ok(config_str(c, "input.name", &s, &e) == 1 && !strcmp(s, "images"), "string by dotted key");
    int64_t h = 0, w = 0;
    ok(config_size(c, "resize.size", &h, &w, &e) == 1 && h == 640 && w == 480, "HxW size");
    double d = 0;
    ok(config_double(c, "scale", &d, &e) == 1 && d == 0.00392156862745098, "double");
    double m[4];
    int n = 0;
    ok(config_doubles(c, "mean", m, 4, &n, &e) == 1 && n == 3 && m[0] == 0.485 &&
       m[2] == 0.406, "list of doubles");
    int64_t i = 0;
    ok(config_int(c, "count", &i, &e) == 1 && i == 12, "int64");
    int b = 0;
    ok(config_bool(c, "flag", &b, &e) == 1 && b == 1, "bool");
    i = 77;
    ok(config_int(c, "missing", &i, &e) == 0 && i == 77 && e.code == 0, "absent keeps default");
    ok(config_int(c, "empty", &i, &e) == 0 && e.code == 0, "null value counts as absent");
    ok(config_int(c, "resize.nothing.deeper", &i, &e) == 0, "absent nested key");
    const cfg_node_t *nd = config_get(c, "mean.1");
    ok(nd && nd->line == 7 && nd->col == 15 && !strcmp(nd->text, "0.456"),
       "node remembers line:column (%d:%d)", nd ? nd->line : -1, nd ? nd->col : -1);

    memset(&e, 0, sizeof e);
    ok(config_size(c, "bad_size", &h, &w, &e) < 0 &&
       !strcmp(e.msg, "x.yaml:11:11: bad_size: expected HxW, got 'abc'"), "HxW error: %s", e.msg);
    memset(&e, 0, sizeof e);
    ok(config_int(c, "quoted", &i, &e) < 0 && strstr(e.msg, "x.yaml:10:9: quoted: expected an integer"),
       "quoted number is a string: %s", e.msg);
    memset(&e, 0, sizeof e);
    ok(config_int(c, "scale", &i, &e) < 0 && e.code == EXIT_BADINPUT, "float is not an int");
    memset(&e, 0, sizeof e);
    ok(config_bool(c, "count", &b, &e) < 0 && strstr(e.msg, "expected true or false"),
       "int is not a bool");
    memset(&e, 0, sizeof e);
    ok(config_double(c, "resize", &d, &e) < 0 && strstr(e.msg, "x.yaml:4:3: resize: expected a number, got a mapping"),
       "mapping is not a number: %s", e.msg);
    memset(&e, 0, sizeof e);
    ok(config_doubles(c, "mean", m, 2, &n, &e) < 0 && strstr(e.msg, "at most 2"),
       "too many list items");
    memset(&e, 0, sizeof e);
    ok(config_str(c, "input.name.x", &s, &e) < 0 &&
       strstr(e.msg, "x.yaml:2:9: input.name: expected a mapping, got 'images'"),
       "scalar where a mapping is needed: %s", e.msg);
    static const char *const methods[] = { "opencv-linear", "pillow-bilinear", NULL };
    int k = -1;
    memset(&e, 0, sizeof e);
    ok(config_enum(c, "resize.method", methods, &k, &e) == 1 && k == 1, "enum");
    memset(&e, 0, sizeof e);
    ok(config_enum(c, "input.name", methods, &k, &e) < 0 &&
       strstr(e.msg, "expected one of opencv-linear, pillow-bilinear, got 'images'"),
       "enum error lists the choices: %s", e.msg);
    memset(&e, 0, sizeof e);
    ok(config_require(c, "nothing", &e) < 0 && strstr(e.msg, "x.yaml: nothing: required key missing"),
       "require");
    config_free(c);
}

static void test_set(void)
{
    perr_t e;
    config_t *c = parse("resize:\n  size: 640x640\nmean: [1, 2, 3]\nx: 5\n", &e);
    ok(c && config_set(c, "resize.size=320x256", &e) == 0, "--set replaces a value");
    int64_t h = 0, w = 0;
    ok(config_size(c, "resize.size", &h, &w, &e) == 1 && h == 320 && w == 256, "replaced value read back");
    ok(config_set(c, "mean=[0.485,0.456,0.406]", &e) == 0, "--set a flow sequence");
    double m[3];
    int n = 0;
    ok(config_doubles(c, "mean", m, 3, &n, &e) == 1 && n == 3 && m[1] == 0.456, "sequence read back");
    ok(config_set(c, "new.deep.key=7", &e) == 0, "--set creates mappings");
    int64_t i = 0;
    ok(config_int(c, "new.deep.key", &i, &e) == 1 && i == 7, "created value read back");
    ok(config_set(c, "mean.0=9", &e) == 0 && config_doubles(c, "mean", m, 3, &n, &e) == 1 &&
       m[0] == 9, "--set indexes a sequence");
    ok(config_set(c, "resize.size=abc", &e) == 0, "--set accepts any scalar");
    memset(&e, 0, sizeof e);
    ok(config_size(c, "resize.size", &h, &w, &e) < 0 &&
       !strcmp(e.msg, "--set resize.size=abc: resize.size: expected HxW, got 'abc'"),
       "--set value error names the override: %s", e.msg);
    memset(&e, 0, sizeof e);
    ok(config_set(c, "x.y=1", &e) < 0 && strstr(e.msg, "'x' is the value '5' at x.yaml:4:4"),
       "--set through a scalar: %s", e.msg);
    memset(&e, 0, sizeof e);
    ok(config_set(c, "novalue", &e) < 0 && strstr(e.msg, "expected KEY=VALUE"), "--set without =");
    memset(&e, 0, sizeof e);
    ok(config_set(c, "a..b=1", &e) < 0 && strstr(e.msg, "bad key"), "--set bad key");
    memset(&e, 0, sizeof e);
    ok(config_set(c, "m=[1,2", &e) < 0 && strstr(e.msg, "--set m=[1,2: did not find"), "--set bad YAML: %s", e.msg);
    config_free(c);

    c = config_new("<defaults>");
    memset(&e, 0, sizeof e);
    ok(config_set(c, "color=bgr", &e) == 0, "--set on an empty config");
    const char *s = NULL;
    ok(config_str(c, "color", &s, &e) == 1 && !strcmp(s, "bgr"), "read back from empty config");
    config_free(c);
}

/* config_check_keys on text: passes (want NULL) or fails with a message
 * that starts with want. */
static void keys_case(const char *text, const char *const *pats, const char *want, const char *name)
{
    perr_t e;
    config_t *c = parse(text, &e);
    memset(&e, 0, sizeof e);
    int rc = c ? config_check_keys(c, pats, &e) : -2;
    if (!want) ok(rc == 0, "%s: %s", name, e.msg);
    else ok(rc < 0 && !strncmp(e.msg, want, strlen(want)), "%s: %s", name, e.msg);
    config_free(c);
}

static void test_keys_and_json(void)
{
    perr_t e;
    const char *const pats[] = { "input.name", "resize.size", "resize.method", "mean",
                                 "extra", "inputs.*.dtype", NULL };
    config_t *c = parse("input:\n  name: a\nresize:\n  sise: 3x3\n", &e);
    memset(&e, 0, sizeof e);
    ok(c && config_check_keys(c, pats, &e) < 0 &&
       !strcmp(e.msg, "x.yaml:4:3: unknown key 'resize.sise' (did you mean 'resize.size'?)"),
       "unknown key with suggestion: %s", e.msg);
    config_free(c);
    c = parse("input: {name: a}\nextra: {anything: [1, 2], goes: 3}\ninputs:\n  a: {dtype: x}\n", &e);
    memset(&e, 0, sizeof e);
    ok(c && config_check_keys(c, pats, &e) == 0, "known keys, free subtree and wildcard pass: %s", e.msg);
    config_set(c, "inputs.b.shape=1", &e);
    memset(&e, 0, sizeof e);
    ok(config_check_keys(c, pats, &e) < 0 && strstr(e.msg, "unknown key 'inputs.b.shape'"),
       "unknown key from --set: %s", e.msg);
    config_free(c);
    /* a key is one part of the path whatever it holds: tensor names such as
     * "input.1" are keys under a '*' */
    keys_case("inputs:\n  input.1: {dtype: x}\n  a.b.c: {dtype: y}\n", pats, NULL, "keys holding dots match a wildcard");
    keys_case("inputs:\n  input.1: {dtyp: x}\n", pats, "x.yaml:2:13: unknown key 'inputs.input.1.dtyp'",
              "unknown key below a dotted key");
    const char *const outs[] = { "outs.*", "outs.*.atol", NULL };
    keys_case("outs:\n  a.b: {atol: 1}\n  c: {}\n  d: ~\n", outs, NULL, "a key some pattern ends at: what the deeper ones name");
    keys_case("outs:\n  a.b: {atl: 1}\n", outs, "x.yaml:2:9: unknown key 'outs.a.b.atl'",
              "a key some pattern ends at: nothing else below it");
    keys_case("resize.size: 3x3\n", pats, "x.yaml:1:1: unknown key 'resize.size'", "a dotted key is not the nested one");

    c = parse("a: 1\nb: 0.5\nc: true\nd: ~\ne: \"7\"\nf: [1, x, -.inf]\ng: {h: 0x10}\n", &e);
    json_t *j = config_to_json(c);
    char *s = json_dumps(j, JSON_COMPACT);
    ok(s && !strcmp(s, "{\"a\":1,\"b\":0.5,\"c\":true,\"d\":null,\"e\":\"7\",\"f\":[1,\"x\",\"-.inf\"],\"g\":{\"h\":16}}"),
       "JSON of the tree: %s", s);
    free(s);
    json_decref(j);
    config_free(c);

    memset(&e, 0, sizeof e);
    c = parse("", &e);
    ok(c && c->root->kind == CFG_MAP && c->root->n == 0, "empty file is an empty mapping");
    config_free(c);
    memset(&e, 0, sizeof e);
    c = config_load("/nonexistent/file.yaml", &e);
    ok(!c && strstr(e.msg, "/nonexistent/file.yaml"), "missing file named: %s", e.msg);
}

int main(void)
{
    test_broken();
    test_positions_and_types();
    test_set();
    test_keys_and_json();
    return done_testing();
}
