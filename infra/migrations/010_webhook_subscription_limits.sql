-- Webhook fan-out amplification: one live subscription per (organization, event type, URL). A second
-- subscription of the same URL to the same event only doubled every delivery. Existing duplicates keep their
-- oldest subscription; the others are deleted the way DELETE does it (deleted_at set, attempt log kept).
UPDATE webhook_subscriptions s SET deleted_at = now()
 WHERE s.deleted_at IS NULL
   AND EXISTS (SELECT 1 FROM webhook_subscriptions o
                WHERE o.organization_id = s.organization_id AND o.event_type = s.event_type
                  AND o.webhook_url = s.webhook_url AND o.deleted_at IS NULL AND o.seq < s.seq);

-- md5 of the URL: a normalized URL may exceed what a btree index row can hold. Disabled subscriptions count
-- (POST .../enable turns them back on); deleted ones do not.
CREATE UNIQUE INDEX webhook_subscriptions_one_per_target
  ON webhook_subscriptions (organization_id, event_type, md5(webhook_url)) WHERE deleted_at IS NULL;
