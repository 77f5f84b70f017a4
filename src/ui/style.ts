/**
 * The hosted pages' stylesheet, served as /ui/assets/hosted.css so the CSP can say style-src 'self'
 * (no inline style). Kept in a TS string so `tsc` ships it in dist with the code that serves it.
 * Palette of the dev inbox; contrast (WCAG AA): #1b1b1b and #4a4a4a on white and on #f4f4f5,
 * white on #1d4ed8, #8a1c00 on white and on #fdf0ed, #14532d on #f0fdf4.
 * Under 480 px every label goes above its value, and the frame gives the content more of the width
 * (docs/hosted-pages.md#mobile-layout); the last rule of the sheet, so it wins over those above.
 */
export const HOSTED_CSS = `
*,*::before,*::after{box-sizing:border-box}
body{font-family:system-ui,sans-serif;line-height:1.5;color:#1b1b1b;background:#f4f4f5;margin:0}
.wrap{max-width:36rem;margin:0 auto;padding:1rem}
.skip{position:absolute;left:-999px;top:0}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:10}
header.site{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:baseline;gap:.5rem;border-bottom:1px solid #a1a1aa;margin-bottom:1rem}
header.site p{margin:.5rem 0;font-weight:600}
nav ul{list-style:none;padding:0;margin:.5rem 0;display:flex;flex-wrap:wrap;gap:1rem}
a{color:#1d4ed8}
a:focus-visible,button:focus-visible,input:focus-visible,[tabindex]:focus-visible,summary:focus-visible{outline:3px solid #1b1b1b;outline-offset:2px}
main{background:#fff;border:1px solid #a1a1aa;border-radius:6px;padding:1rem 1.25rem;margin-bottom:1rem}
main:focus{outline:none}
h1{font-size:1.6rem;margin:.25rem 0 1rem}
h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
.field{margin:0 0 1rem}
label{display:block;font-weight:600;margin-bottom:.25rem}
.hint{color:#4a4a4a;margin:0 0 .25rem;font-size:.95rem}
input[type=email],input[type=password],input[type=text]{width:100%;font:inherit;padding:.5rem;border:2px solid #4a4a4a;border-radius:4px;background:#fff;color:#1b1b1b}
input[aria-invalid=true]{border-color:#8a1c00}
.field-error{color:#8a1c00;font-weight:600;margin:0 0 .25rem}
button{font:inherit;font-weight:600;background:#1d4ed8;color:#fff;border:2px solid #1d4ed8;border-radius:4px;padding:.6rem 1.1rem;cursor:pointer}
button.secondary{background:#fff;color:#1d4ed8}
button.danger{background:#8a1c00;border-color:#8a1c00}
a.button{display:inline-block;font-weight:600;text-decoration:none;border:2px solid #1d4ed8;border-radius:4px;padding:.6rem 1.1rem;background:#fff;color:#1d4ed8}
ul.federated{list-style:none;padding:0;margin:.5rem 0 1rem}
ul.federated li{margin:0 0 .5rem}
button[disabled]{opacity:.7;cursor:progress}
.error-summary{border:3px solid #8a1c00;background:#fdf0ed;color:#1b1b1b;border-radius:4px;padding:.5rem 1rem;margin:0 0 1rem}
.error-summary h2{margin:.25rem 0;color:#8a1c00;font-size:1.1rem}
.error-summary ul{margin:.25rem 0;padding-left:1.25rem}
.error-summary a{color:#8a1c00;font-weight:600}
.error-summary:focus{outline:3px solid #1b1b1b;outline-offset:2px}
.notice{border-left:6px solid #14532d;background:#f0fdf4;padding:.5rem 1rem;margin:0 0 1rem}
.note{border-left:6px solid #4a4a4a;background:#f4f4f5;padding:.5rem 1rem;margin:0 0 1rem}
.bot{margin:0 0 1rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
code,.secret{font-family:ui-monospace,monospace;overflow-wrap:anywhere}
.secret{font-size:1.1rem;letter-spacing:.05em}
ol.codes{list-style:none;padding:0;margin:1rem 0;font-family:ui-monospace,monospace;font-size:1.05rem;columns:2 14em;column-gap:2rem}
ol.codes li{display:flex;align-items:baseline;gap:1ch;break-inside:avoid;margin:0 0 .4rem}
ol.codes .code-number{flex:none;min-width:3ch;text-align:right;color:#4a4a4a;user-select:none}
ol.codes code{white-space:nowrap;overflow-wrap:normal;font-weight:600}
img.qr{display:block;width:240px;height:240px;margin:.5rem 0;border:1px solid #a1a1aa}
.actions{display:flex;flex-wrap:wrap;gap:.75rem;align-items:center;margin:1rem 0}
form.inline{display:inline}
footer{color:#4a4a4a;font-size:.9rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
ul.sessions{list-style:none;padding:0}
ul.sessions>li{border:1px solid #a1a1aa;padding:.5rem 1rem;margin:0 0 .75rem;overflow-wrap:anywhere}
ul.sessions p{margin:.25rem 0}
details.rename{margin:.5rem 0}
details.rename>summary{display:inline-block;list-style:none;font-weight:600;border:2px solid #1d4ed8;border-radius:4px;padding:.6rem 1.1rem;color:#1d4ed8;background:#fff;cursor:pointer}
details.rename>summary::-webkit-details-marker{display:none}
details.rename>summary::before{content:"\\25B8\\a0"/"";}
details.rename[open]>summary::before{content:"\\25BE\\a0"/"";}
details.rename>form{margin-top:.5rem}
.badge{display:inline-block;background:#14532d;color:#fff;font-size:.85rem;padding:0 .4rem;border-radius:.25rem}
@media (max-width:479.98px){
.wrap{padding:.5rem}
main{padding:.75rem 1rem}
nav ul{gap:.25rem 1rem}
dl{grid-template-columns:minmax(0,1fr);gap:0}
dt{margin-top:.5rem}dt:first-child{margin-top:0}
.secret{font-size:.95rem;letter-spacing:0}
}
`;
