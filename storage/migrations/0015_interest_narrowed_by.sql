-- The paper a person named for one of their typed topics (`/paper interests add paper:` close to it,
-- as the note on a broad topic asks): it says which part of the topic they mean, so the topic's words
-- stop binding that interest's picks. The topic stays if the paper goes.
ALTER TABLE interests ADD COLUMN narrowed_by INTEGER REFERENCES papers(id) ON DELETE SET NULL;
