-- Each person's DM channel with the bot, kept once it is known (as ../0004_dm_channel_ids.sql).
ALTER TABLE users ADD COLUMN dm_channel_id BIGINT;

UPDATE users SET dm_channel_id = (
    SELECT pm.channel_id FROM posted_messages pm
     WHERE pm.recipient_id = users.id AND pm.guild_id IS NULL
     ORDER BY pm.posted_at DESC
     LIMIT 1
);
