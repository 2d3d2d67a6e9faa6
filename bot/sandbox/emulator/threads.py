"""Threads and forum posts: making them, archiving them, and the rules Discord applies inside them.

As Discord's threads topic has it: a thread has its parent channel's permissions, but posting in one
takes SEND_MESSAGES_IN_THREADS (SEND_MESSAGES has no effect there); a private thread is seen only by
its members and by those who may manage threads; a forum channel holds only posts — each a thread
whose first message shares its id — and a message sent to the forum itself is refused (40058); in an
archived thread no one can add reactions, edit messages or use application commands, and a message
sent there unarchives it unless it was locked (then only MANAGE_THREADS may). THREAD_CREATE and
THREAD_UPDATE go to a bot that can see the thread, and GUILD_CREATE lists the active ones.
"""

from __future__ import annotations

from .effects import Effects
from .lookup import Lookup
from .recorder import ClientRefused
from .rest import ApiError, missing_permissions
from .state import ChannelType, Permissions, SandboxChannel, SandboxUser, World

CANNOT_POST_IN_FORUM = ApiError(400, 40058, "Cannot send a message in a forum channel")


def archived_thread() -> ApiError:
    return ApiError(400, 50083, "Thread is archived")


class Threads:
    def __init__(self, world: World, *, lookup: Lookup, effects: Effects) -> None:
        self.world = world
        self.lookup = lookup
        self.effects = effects

    # -- what people and admins do ------------------------------------------------------------------

    def add_forum(self, name: str, *, topic: str | None = None) -> SandboxChannel:
        """A forum channel (CHANNEL_CREATE): only posts can be made there (``add_forum_post``)."""
        forum = self.world.add_channel(name, topic=topic, kind=ChannelType.FORUM)
        self.effects.dispatch("CHANNEL_CREATE", forum.payload(), forum.guild_id)
        return forum

    def add_thread(
        self,
        parent: SandboxChannel | str,
        name: str,
        *,
        by: SandboxUser | str = "alice",
        private: bool = False,
        members: tuple[SandboxUser | str, ...] = (),
    ) -> SandboxChannel:
        """``by`` starts a thread in a text channel (THREAD_CREATE); a private one holds ``by`` and
        ``members`` only."""
        parent = self.lookup.channel(parent)
        owner = self.lookup.user(by)
        if not self.world.user_permissions(parent, owner) & (
            Permissions.CREATE_PRIVATE_THREADS if private else Permissions.CREATE_PUBLIC_THREADS
        ):
            raise ClientRefused(f"{owner.username} may not start threads in {parent.label()}")
        thread = self.world.add_thread(parent, name, owner, private=private)
        assert thread.thread is not None
        thread.thread.members.update(self.lookup.user(m).id for m in members)
        self._announce("THREAD_CREATE", thread, newly_created=True)
        return thread

    def add_forum_post(
        self, forum: SandboxChannel | str, title: str, content: str, *, by: SandboxUser | str = "alice"
    ) -> SandboxChannel:
        """``by`` posts in a forum: a thread titled ``title`` whose first message (with the thread's id)
        says ``content``. Posting there needs only SEND_MESSAGES."""
        forum = self.lookup.channel(forum)
        author = self.lookup.user(by)
        if not forum.is_forum:
            raise ClientRefused(f"{forum.label()} is not a forum")
        if not self.world.user_permissions(forum, author) & Permissions.SEND_MESSAGES:
            raise ClientRefused(f"{author.username} may not post in {forum.label()}")
        post = self.world.add_thread(forum, title, author)
        self._announce("THREAD_CREATE", post, newly_created=True)
        message = self.world.new_message(post, author, content=content, origin="user", message_id=post.id)
        self.effects.dispatch("MESSAGE_CREATE", self.effects.message_event(message), post.guild_id)
        self.effects.notify_listeners("create", message)
        return post

    def archive(self, thread: SandboxChannel | str, *, locked: bool = False) -> None:
        """Archive a thread (as inactivity or a moderator does), optionally locked (THREAD_UPDATE)."""
        thread = self.lookup.channel(thread)
        state = thread.thread
        if state is None:
            raise ClientRefused(f"{thread.label()} is not a thread")
        state.archived, state.locked = True, locked
        state.archive_timestamp = self.world.clock.now()
        self._announce("THREAD_UPDATE", thread)

    # -- the rules inside ----------------------------------------------------------------------------

    def check_post(self, channel: SandboxChannel, perms: int) -> None:
        """Before the bot posts in ``channel`` (with permissions ``perms``): a forum is refused, a thread
        needs SEND_MESSAGES_IN_THREADS, a locked archived one MANAGE_THREADS; an archived one is
        unarchived by the post."""
        if channel.is_forum:
            raise CANNOT_POST_IN_FORUM
        state = channel.thread
        if state is None:
            if not perms & Permissions.SEND_MESSAGES:
                raise missing_permissions()
            return
        if not perms & Permissions.SEND_MESSAGES_IN_THREADS:
            raise missing_permissions()
        if state.archived:
            if state.locked and not perms & Permissions.MANAGE_THREADS:
                raise archived_thread()
            self.reopen(channel)

    @staticmethod
    def check_active(channel: SandboxChannel) -> None:
        """Reactions and edits need an active thread."""
        if channel.thread is not None and channel.thread.archived:
            raise archived_thread()

    def check_user_post(self, channel: SandboxChannel, user: SandboxUser) -> None:
        """What Discord's client lets a person post: as :meth:`check_post`, refused as ClientRefused."""
        try:
            self.check_post(channel, self.world.user_permissions(channel, user))
        except ApiError as error:
            raise ClientRefused(f"{user.username} cannot post in {channel.label()}: {error}") from None

    def reopen(self, thread: SandboxChannel) -> None:
        """A message in an archived thread unarchives it (THREAD_UPDATE)."""
        assert thread.thread is not None
        thread.thread.archived = thread.thread.locked = False
        thread.thread.archive_timestamp = self.world.clock.now()
        self._announce("THREAD_UPDATE", thread)

    def _announce(self, event: str, thread: SandboxChannel, *, newly_created: bool = False) -> None:
        guild = self.world.guilds[thread.guild_id or 0]
        if not guild.permissions_in(thread, self.world.bot_user.id) & Permissions.VIEW_CHANNEL:
            return  # Discord tells a bot only of threads it can see
        data = thread.payload()
        if newly_created:
            data["newly_created"] = True
        self.effects.dispatch(event, data, thread.guild_id)
