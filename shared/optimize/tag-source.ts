import { FORBIDDEN_ELEMENTS } from './ops.ts';
import type { PropertyConfig } from './live-config.ts';

// The tag: plain JavaScript, no dependencies, served by the gateway with the property's config inlined. Pasted as a
// synchronous <script> in <head>, it runs before the body is parsed:
//   - visitor id from the first-party rd_sid cookie (made on the first visit, one year), exposed with the variants
//     this page showed as window.openlineOptimize = { visitorId, variants: { <test id>: <variant id> } };
//   - shipped variants are applied for everyone on their page;
//   - for each running test of the page: enrolment and variant by the same hash as the server (bucketing.ts), an
//     impression once per visitor per test, a redirect followed at once, or the ops applied as the elements are
//     parsed (an element once the parser has moved past it, so its content is complete), behind an anti-flicker guard (html hidden) lifted at DOMContentLoaded or after GUARD_MS at the latest;
//   - goals (form submit, tel: click, CTA or selector click, URL visit) of tests the visitor was shown, each sent once;
//   - events batched and sent with navigator.sendBeacon (on a short timer, on pagehide, before a redirect).
// The tag never changes script, style, iframe and the like (FORBIDDEN_ELEMENTS), whatever a selector matches, and
// sets text with textContent only.

export const GUARD_MS = 1000;

/** bucketing.ts's unitHash (h: string, hash version) and assignVariant (pick: a test of the config, visitor id) in the
 *  tag's JavaScript; test/optimize/bucketing.test.ts checks they agree with the server's for both hash versions. */
export const TAG_BUCKETING = `function h(s,n){var x=0x811c9dc5,i;for(i=0;i<s.length;i++){x^=s.charCodeAt(i);x=Math.imul(x,0x01000193)>>>0}
if(n>=2){x^=x>>>16;x=Math.imul(x,0x85ebca6b);x^=x>>>13;x=Math.imul(x,0xc2b2ae35);x^=x>>>16;x>>>=0}return x/4294967296}
function pick(t,V){if(h(t.i+"."+V+".split",t.h)>=t.s)return null;var tot=0,i,x;for(i=0;i<t.v.length;i++)tot+=t.v[i].w;
x=h(t.i+"."+V,t.h)*tot;for(i=0;i<t.v.length;i++){if(x<t.v[i].w)return t.v[i];x-=t.v[i].w}return t.v[t.v.length-1]}`;

const SOURCE = `(function(C){var w=window,d=document,n=navigator,N="openlineOptimize";if(w[N])return;
var O={visitorId:null,variants:{}};w[N]=O;if(!n.userAgent||C.b.test(n.userAgent))return;
function ck(){var m=/(?:^|; )rd_sid=([A-Za-z0-9_-]{8,64})/.exec(d.cookie);if(m)return m[1];var a=new Uint8Array(16),s="",i;
(w.crypto||{getRandomValues:function(x){for(i=0;i<x.length;i++)x[i]=Math.random()*256}}).getRandomValues(a);
for(i=0;i<16;i++)s+="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".charAt(a[i]&63);
d.cookie="rd_sid="+s+"; path=/; max-age=31536000; samesite=lax"+(location.protocol=="https:"?"; secure":"");return s}
var V=O.visitorId=ck();
${TAG_BUCKETING}
function np(p){return p.length>1?p.replace(/\\/+$/,""):p}
function here(u){try{var p=new URL(u,location.href);return p.host==location.host&&np(p.pathname)==np(location.pathname)}catch(e){return false}}
var Q=[],T=0;function flush(){clearTimeout(T);T=0;if(!Q.length)return;var b=JSON.stringify({k:C.k,v:V,e:Q});Q=[];
try{if(!n.sendBeacon||!n.sendBeacon(C.c,b))throw 0}catch(e){try{fetch(C.c,{method:"POST",body:b,keepalive:true,mode:"no-cors"})}catch(e2){}}}
function q(e){Q.push(e);if(Q.length>=20)flush();else if(!T)T=setTimeout(flush,C.f)}
function ls(k,v){try{if(v===undefined)return w.localStorage.getItem(k);w.localStorage.setItem(k,v)}catch(e){}}
var F=C.x,ops=[];
function ok(el){return el.namespaceURI=="http://www.w3.org/1999/xhtml"&&!F.test(el.tagName)}
function ap(o,el){if(!ok(el))return;switch(o.op){case"setText":el.textContent=o.value;break;
case"setAttribute":el.setAttribute(o.name,o.value);break;case"addClass":el.classList.add(o.value);break;
case"removeClass":el.classList.remove(o.value);break;case"setStyle":el.style.setProperty(o.property,o.value);break;
case"hide":el.style.setProperty("display","none","important");break;case"replaceHref":el.setAttribute("href",o.value)}}
function fin(e){for(;e&&e!=d;e=e.parentNode)if(e.nextSibling)return 1}
function run(all){for(var i=0;i<ops.length;i++){var o=ops[i],l;try{l=d.querySelectorAll(o.selector)}catch(e){continue}
for(var j=0;j<l.length;j++)if(!o.d.has(l[j])&&(all===1||fin(l[j]))){o.d.add(l[j]);ap(o,l[j])}}}
function use(list){for(var i=0;i<list.length;i++)ops.push({op:list[i].op,selector:list[i].selector,value:list[i].value,
name:list[i].name,property:list[i].property,d:new WeakSet()})}
var go=null,act=[];
for(var i=0;i<C.p.length;i++){var s=C.p[i];if(here(s.u)){if(s.r){go=s.r;break}use(s.o)}}
for(i=0;i<C.t.length&&!go;i++){var t=C.t[i],v=pick(t,V);if(!v)continue;
var on=here(t.u),seen=ls("ol_s_"+t.i)==v.i;if(on){O.variants[t.i]=v.i;q({t:"i",x:t.i});ls("ol_s_"+t.i,v.i);if(v.r){go=v.r}else use(v.o)}
if(on||seen||(v.r&&here(v.r)))act.push(t)}
if(go){flush();location.replace(go);return}
if(ops.length){var g=d.createElement("style"),done=0;g.textContent="html{opacity:0!important}";(d.head||d.documentElement).appendChild(g);
var mo=new MutationObserver(function(){run()});mo.observe(d.documentElement,{childList:true,subtree:true});run();
function show(){if(done)return;done=1;run(1);mo.disconnect();if(g.parentNode)g.parentNode.removeChild(g)}
d.addEventListener("DOMContentLoaded",show);setTimeout(show,C.g)}
function goal(t){if(ls("ol_g_"+t.i))return;ls("ol_g_"+t.i,"1");q({t:"g",x:t.i})}
function um(g){var u=location.href.slice(0,2000),p=g.url_pattern;switch(g.url_match_type){case"exact":return u==p;
case"contains":return u.indexOf(p)>=0;case"prefix":return u.indexOf(p)==0;case"regex":try{return new RegExp(p).test(u)}catch(e){}}return false}
function cl(ev,sub){for(var i=0;i<act.length;i++){var g=act[i].g,el=ev.target;if(!el||!el.closest)continue;
if(sub?g.type=="form_submit"&&el.matches&&el.matches(g.selector):g.type!="form_submit"&&g.type!="url_visit"&&(el=el.closest(g.selector))&&
(g.type!="tel_click"||/^\\s*tel:/i.test(el.getAttribute("href")||""))){goal(act[i]);flush()}}}
d.addEventListener("click",function(e){cl(e,0)},true);d.addEventListener("submit",function(e){cl(e,1)},true);
for(i=0;i<act.length;i++)if(act[i].g.type=="url_visit"&&um(act[i].g))goal(act[i]);
w.addEventListener("pagehide",flush);d.addEventListener("visibilitychange",function(){if(d.visibilityState=="hidden")flush()});
})(`;

/** Makes JSON safe inside a <script> and a JS string context. */
const jsSafe = (json: string) => json.replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');

/** The tag's JavaScript for a property (its config inlined). */
export function tagScript(config: PropertyConfig, publicKey: string, collectorUrl: string, botPattern: RegExp): string {
  const c = {
    k: publicKey, c: collectorUrl, f: 500, g: GUARD_MS,
    t: config.running.map((t) => ({
      i: t.id, u: t.page_url, s: t.traffic_split, h: t.hash_version, g: t.goal,
      v: t.variants.map((v) => ({ i: v.id, w: v.weight, o: v.ops, r: v.redirect_url })),
    })),
    p: config.shipped.map((s) => ({ u: s.page_url, o: s.ops, r: s.redirect_url })),
  };
  const forbidden = `/^(${FORBIDDEN_ELEMENTS.join('|')})$/i`;
  return `${SOURCE}Object.assign(${jsSafe(JSON.stringify(c))},{b:${botPattern.toString()},x:${forbidden}}));\n`;
}
