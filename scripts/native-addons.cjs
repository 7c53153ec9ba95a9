// Preloaded (NODE_OPTIONS=--require) by scripts/with-node.mjs when the tests run under a Node other than the one
// `npm ci` built node_modules with. A native addon built for another Node's ABI refuses to load, and better-sqlite3
// finds its addon at one fixed path (node_modules/better-sqlite3/build/Release): this swaps, by absolute path, the
// addons named in EONCE_NATIVE_ADDONS (a JSON object: path npm built → path of the build for this Node), so that
// node_modules is left as it is for the machine's Node. Child processes inherit NODE_OPTIONS, and so the swap.
"use strict";
const swaps = JSON.parse(process.env.EONCE_NATIVE_ADDONS || "{}");
if (Object.keys(swaps).length > 0) {
  const dlopen = process.dlopen;
  process.dlopen = function swappedDlopen(module, filename, ...rest) {
    return dlopen.call(this, module, swaps[filename] ?? filename, ...rest);
  };
}
