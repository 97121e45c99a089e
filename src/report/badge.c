/*
 * badge: rpt_render_badge (rpt.h), a small SVG in the shields.io flat style: "faultline" on
 * grey, then the resilience score (or the verdict when there is none) on the verdict's colour
 * (esc_verdict_colour: scored green / yellow / red by score, aborted orange, invalid grey).
 * Widths are estimated at 7 px a character (Verdana 11 px): no font is measured or loaded.
 */
#include <stdio.h>
#include <string.h>

#include "report/esc.h"
#include "report/rpt.h"
#include "util/banned.h"

int rpt_render_badge(const json_t *report, struct buf *out)
{
    const char *verdict = esc_str(report, "verdict", "invalid");
    int has = esc_has_num(report, "resilience_score");
    double score = esc_num(report, "resilience_score", 0);
    char value[64];
    int lw = 62, vw, w;

    if (strcmp(verdict, "scored") != 0 && strcmp(verdict, "aborted") != 0)
        verdict = "invalid";
    if (has && strcmp(verdict, "scored") == 0)
        snprintf(value, sizeof(value), "%.0f", score);
    else if (has)
        snprintf(value, sizeof(value), "%.0f %s", score, verdict);
    else
        snprintf(value, sizeof(value), "%s", verdict);
    vw = (int)strlen(value) * 7 + 12;
    w = lw + vw;
    return buf_addf(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"20\" role=\"img\" "
        "aria-label=\"faultline: %s\">\n"
        "<title>faultline: %s</title>\n"
        "<rect width=\"%d\" height=\"20\" rx=\"3\" fill=\"#555\"/>\n"
        "<rect x=\"%d\" width=\"%d\" height=\"20\" rx=\"3\" fill=\"%s\"/>\n"
        "<rect x=\"%d\" width=\"4\" height=\"20\" fill=\"%s\"/>\n"
        "<g fill=\"#fff\" text-anchor=\"middle\" font-family=\"Verdana,DejaVu Sans,sans-serif\" "
        "font-size=\"11\">\n"
        "<text x=\"%d\" y=\"14\">faultline</text>\n"
        "<text x=\"%d\" y=\"14\">%s</text>\n"
        "</g>\n</svg>\n",
        w, value, value, w, lw, vw, esc_verdict_colour(verdict, has, score), lw,
        esc_verdict_colour(verdict, has, score), lw / 2, lw + vw / 2, value);
}
