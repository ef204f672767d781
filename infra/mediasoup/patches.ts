// Our changes to the mediasoup worker's C++, applied to the scratch copy infra/mediasoup/build.ts compiles. Each one
// replaces an anchor that must occur exactly once in mediasoup's source: a mediasoup upgrade that moves an anchor
// stops the build with the patch's name instead of building a worker without it. The cached binary's name carries
// WORKER_PATCH_LEVEL (shared/media/worker-binary.ts), so a changed patch is never served by an old cached build.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface Edit { file: string; anchor: string; replacement: string }
interface Patch { name: string; why: string; edits: Edit[] }

// A SIP far end never signals its SSRC (an SDP answer carries none, and a far end may change it on its own), but
// mediasoup routes incoming RTP to a producer by SSRC, MID or RID and drops the rest. With this patch a PlainTransport
// whose only producer is one audio encoding takes RTP of an unknown SSRC carrying that producer's payload type as
// that producer's, rewriting the SSRC to the producer's own. Other transports (WebRTC ones) are unchanged. Without
// it every SIP leg needs a relay in JS that rewrites SSRCs, and every RTP packet crosses loopback twice more.
const UNSIGNALLED_SSRC: Patch = {
  name: 'unsignalled-ssrc',
  why: 'SIP legs: a PlainTransport adopts the far end\'s unsignalled SSRC',
  edits: [
    {
      file: 'include/RTC/Transport.hpp',
      anchor: '\t\tvirtual void RecvStreamClosed(uint32_t ssrc)               = 0;\n',
      replacement: '\t\tvirtual void RecvStreamClosed(uint32_t ssrc)               = 0;\n' +
        '\t\t// openline patch (unsignalled-ssrc): whether RTP of an unknown SSRC may go to the only audio producer.\n' +
        '\t\tvirtual bool AdoptsUnsignalledSsrc() const\n\t\t{\n\t\t\treturn false;\n\t\t}\n' +
        '\t\tRTC::Producer* AdoptUnsignalledSsrc(RTC::RtpPacket* packet) const;\n',
    },
    {
      file: 'include/RTC/PlainTransport.hpp',
      anchor: '\t\tvoid RecvStreamClosed(uint32_t ssrc) override;\n',
      replacement: '\t\tvoid RecvStreamClosed(uint32_t ssrc) override;\n' +
        '\t\tbool AdoptsUnsignalledSsrc() const override\n\t\t{\n\t\t\treturn true;\n\t\t}\n',
    },
    {
      file: 'src/RTC/Transport.cpp',
      anchor: '\t\tRTC::Producer* producer = this->rtpListener.GetProducer(packet);\n',
      replacement: '\t\tRTC::Producer* producer = this->rtpListener.GetProducer(packet);\n\n' +
        '\t\t// openline patch (unsignalled-ssrc).\n' +
        '\t\tif (!producer && AdoptsUnsignalledSsrc())\n\t\t\tproducer = AdoptUnsignalledSsrc(packet);\n',
    },
    {
      file: 'src/RTC/Transport.cpp',
      anchor: '\tvoid Transport::ReceiveRtcpPacket(RTC::RTCP::Packet* packet)\n',
      replacement: [
        '\t// openline patch (unsignalled-ssrc): the only producer, when it is one audio encoding with an SSRC and the',
        '\t// packet carries one of its media codecs\' payload types; the packet then takes that encoding\'s SSRC.',
        '\tRTC::Producer* Transport::AdoptUnsignalledSsrc(RTC::RtpPacket* packet) const',
        '\t{',
        '\t\tif (this->mapProducers.size() != 1)',
        '\t\t\treturn nullptr;',
        '',
        '\t\tauto* producer = this->mapProducers.begin()->second;',
        '\t\tconst auto& rtpParameters = producer->GetRtpParameters();',
        '',
        '\t\tif (producer->GetKind() != RTC::Media::Kind::AUDIO || rtpParameters.encodings.size() != 1)',
        '\t\t\treturn nullptr;',
        '',
        '\t\tconst uint32_t ssrc = rtpParameters.encodings[0].ssrc;',
        '',
        '\t\tif (ssrc == 0u)',
        '\t\t\treturn nullptr;',
        '',
        '\t\tfor (const auto& codec : rtpParameters.codecs)',
        '\t\t{',
        '\t\t\tif (codec.mimeType.IsMediaCodec() && codec.payloadType == packet->GetPayloadType())',
        '\t\t\t{',
        '\t\t\t\tpacket->SetSsrc(ssrc);',
        '',
        '\t\t\t\treturn producer;',
        '\t\t\t}',
        '\t\t}',
        '',
        '\t\treturn nullptr;',
        '\t}',
        '',
        '\tvoid Transport::ReceiveRtcpPacket(RTC::RTCP::Packet* packet)',
        '',
      ].join('\n'),
    },
  ],
};

export const WORKER_PATCHES: readonly Patch[] = [UNSIGNALLED_SSRC];

/** Applies every patch to the worker source at `workerDir` (mediasoup's `worker/` folder). */
export function applyWorkerPatches(workerDir: string, say: (line: string) => void): void {
  for (const patch of WORKER_PATCHES) {
    for (const edit of patch.edits) {
      const path = join(workerDir, edit.file);
      const text = readFileSync(path, 'utf8');
      const at = text.indexOf(edit.anchor);
      if (at < 0 || text.indexOf(edit.anchor, at + 1) >= 0) {
        throw new Error(`patch ${patch.name}: its anchor in ${edit.file} is not there exactly once (a mediasoup upgrade moved it)`);
      }
      writeFileSync(path, text.slice(0, at) + edit.replacement + text.slice(at + edit.anchor.length));
    }
    say(`patched: ${patch.name} (${patch.why})`);
  }
}
