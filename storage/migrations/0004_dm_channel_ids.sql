-- Each person's DM channel with the bot, kept once it is known: a digest posts straight to it, with
-- no user fetch and no DM open (Discord answers a burst of opens with 40003, and the id never changes).
ALTER TABLE users ADD COLUMN dm_channel_id INTEGER;

-- Already known for everyone the bot sent a paper by DM: the channel those messages went to.
UPDATE users SET dm_channel_id = (
    SELECT pm.channel_id FROM posted_messages pm
     WHERE pm.recipient_id = users.id AND pm.guild_id IS NULL
     ORDER BY pm.posted_at DESC
     LIMIT 1
);
