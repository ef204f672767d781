-- Inbound calls to a number (CARRIER=sip, docs/reference/sip-trunking.md "Inbound routing"): what answers them.
-- softphone rings every browser listening for the number on the softphone WebSocket (the first to accept takes the
-- call; nobody within the ring timeout: 480, NO_ANSWER); reject answers 480 and records nothing. softphone is the
-- default: a call to a number you hold rings where you take calls.
ALTER TABLE phone_numbers
  ADD COLUMN inbound text NOT NULL DEFAULT 'softphone' CHECK (inbound IN ('softphone', 'reject'));
