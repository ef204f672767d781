-- Where a held number came from: 'purchased' from the carrier's inventory (POST /v1/phone-numbers, bootstrap), or
-- 'imported': a DID the SIP trunk provider sold, brought onto the organization (admin number import,
-- POST /v1/phone-numbers/import). Every existing row was bought.
ALTER TABLE phone_numbers
  ADD COLUMN source text NOT NULL DEFAULT 'purchased' CHECK (source IN ('purchased', 'imported'));
