// report-chromium.mjs PAGE.html SHOT.png: opens a faultline HTML report in the system's
// headless Chromium (Debian's chromium, driven by puppeteer-core over the DevTools protocol)
// and prints one JSON object: every request the page tried other than its own file (each is
// aborted), every console message and page error, what the DOM holds after load (scripts,
// whether the body is displayed, the page's outline: headings and section classes), and how
// much of the screenshot (written to SHOT.png; the whole page with FULL_PAGE=1, as for
// docs/report.png) is not background. The test asserts on it.
import { readFileSync } from "node:fs";
import { inflateSync } from "node:zlib";
import { pathToFileURL } from "node:url";
import puppeteer from "puppeteer-core";

const [page_path, shot_path] = process.argv.slice(2);
const url = pathToFileURL(page_path).href;

// The share of pixels that are not the most common colour, and the number of colours, of an
// 8-bit RGB(A) PNG: a blank page has one colour and no ink.
function ink(file) {
    const b = readFileSync(file);
    let pos = 8, w = 0, h = 0, bpp = 0;
    const idat = [];
    while (pos < b.length) {
        const n = b.readUInt32BE(pos), kind = b.toString("latin1", pos + 4, pos + 8);
        const body = b.subarray(pos + 8, pos + 8 + n);
        if (kind === "IHDR") {
            w = body.readUInt32BE(0); h = body.readUInt32BE(4);
            if (body[8] !== 8 || (body[9] !== 2 && body[9] !== 6)) throw new Error("not 8-bit RGB(A)");
            bpp = body[9] === 2 ? 3 : 4;
        } else if (kind === "IDAT") idat.push(body);
        pos += 12 + n;
    }
    const data = inflateSync(Buffer.concat(idat)), stride = w * bpp;
    let prev = Buffer.alloc(stride);
    const counts = new Map();
    for (let y = 0, p = 0; y < h; y++, p += 1 + stride) {
        const f = data[p], line = Buffer.from(data.subarray(p + 1, p + 1 + stride));
        for (let i = 0; i < stride; i++) {
            const a = i >= bpp ? line[i - bpp] : 0, up = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
            let pred = 0;
            if (f === 1) pred = a;
            else if (f === 2) pred = up;
            else if (f === 3) pred = (a + up) >> 1;
            else if (f === 4) {
                const q = a + up - c, pa = Math.abs(q - a), pb = Math.abs(q - up), pc = Math.abs(q - c);
                pred = pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
            } else if (f !== 0) throw new Error("bad PNG filter " + f);
            line[i] = (line[i] + pred) & 255;
        }
        for (let x = 0; x < stride; x += bpp) {
            const k = (line[x] << 16) | (line[x + 1] << 8) | line[x + 2];
            counts.set(k, (counts.get(k) || 0) + 1);
        }
        prev = line;
    }
    const most = Math.max(...counts.values());
    return { width: w, height: h, colours: counts.size, ink: 1 - most / (w * h) };
}

const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync"],
    timeout: 60000,
});
const out = { requests: [], console: [], errors: [] };
try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 1000 });
    await page.setRequestInterception(true);
    page.on("request", (r) => {
        if (r.url() === url) return r.continue();
        out.requests.push(r.url().slice(0, 200));
        return r.abort();
    });
    page.on("console", (m) => out.console.push(`${m.type()}: ${m.text()}`.slice(0, 300)));
    page.on("pageerror", (e) => out.errors.push(String(e).slice(0, 300)));
    await page.goto(url, { waitUntil: "load", timeout: 60000 });
    out.dom = await page.evaluate(() => ({
        title: document.title,
        scripts: document.querySelectorAll("script").length,
        handlers: [...document.querySelectorAll("*")].filter((e) =>
            [...e.attributes].some((a) => a.name.startsWith("on"))).length,
        body_displayed: getComputedStyle(document.body).display !== "none" &&
            getComputedStyle(document.body).visibility !== "hidden",
        width: document.documentElement.scrollWidth,
        outline: [...document.querySelectorAll("h1, h2, h3, section")].map((e) =>
            e.tagName === "SECTION" ? `section.${e.className}` :
                `${e.tagName.toLowerCase()} ${e.textContent.trim().replace(/\s+/g, " ").slice(0, 60)}`),
    }));
    await page.screenshot({ path: shot_path, fullPage: process.env.FULL_PAGE === "1" });
    out.shot = ink(shot_path);
} finally {
    await browser.close();
}
process.stdout.write(JSON.stringify(out) + "\n");
