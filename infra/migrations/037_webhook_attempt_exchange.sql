-- What each webhook delivery attempt sent and got back, for the API's delivery log and the console: the request's
-- headers (the signature headers, content type, user agent) and body as sent, and the first 2 KiB of the
-- receiver's answer with its content type. Null on attempts logged before this migration and when no response came.
ALTER TABLE webhook_delivery_attempts
  ADD COLUMN request_headers jsonb,
  ADD COLUMN request_body text,
  ADD COLUMN response_content_type text,
  ADD COLUMN response_body text,
  ADD COLUMN response_body_truncated boolean;
