// fetch3.js URL...: GETs each URL in turn with fetch, printing "STATUS BODY" per line.
// Node 20's global fetch ignores the proxy variables (NODE_USE_ENV_PROXY needs Node 22.21 /
// 24); undici, the library that is Node's fetch, takes them through EnvHttpProxyAgent, which
// is what NODE_USE_ENV_PROXY=1 installs in later Nodes. The undici npm bundles is used.
// The CA comes from NODE_EXTRA_CA_CERTS, as for any Node program.
const undici = require(process.env.UNDICI || "/usr/lib/node_modules/npm/node_modules/undici");
const dispatcher = new undici.EnvHttpProxyAgent();
(async () => {
    for (const url of process.argv.slice(2)) {
        try {
            const r = await undici.fetch(url, {
                dispatcher,
                headers: { Authorization: "token s3cret" },
            });
            console.log(r.status + " " + (await r.text()).replace(/\n/g, " "));
        } catch (e) {
            console.log("ERROR " + e.message + (e.cause ? ": " + e.cause.message : ""));
        }
    }
    await dispatcher.close();
})();
