// grow_js.js: a node program whose memory grows by JavaScript objects only
// (V8's own heap, mapped by V8, not malloc): SECONDS [MIB_PER_S [MAX_MIB]].
// Prints "ready" once started.
const seconds = Number(process.argv[2] || 20);
const rate = Number(process.argv[3] || 30);
const cap = Number(process.argv[4] || 400);
const PER_ITEM = 80;    // bytes an {i, s} object holds, roughly
const kept = [];
let i = 0;
console.log("ready");
const end = Date.now() + seconds * 1000;
const timer = setInterval(() => {
  if (Date.now() >= end) {
    clearInterval(timer);
    return;
  }
  if (i * PER_ITEM < cap * 2 ** 20) {
    const n = Math.floor((rate * 2 ** 20) / PER_ITEM / 100);
    for (let k = 0; k < n; k++, i++) kept.push({ i, s: "item-" + i });
  }
}, 10);
