"""Notifications: a message the household should see, kept on the dashboard (a banner on every
page while any is unread, and the Notifications page) and sent through Apprise to the
household's services (`NOTIFY_URLS`) and each account's own (`NotifyTarget`).

`services.notify` is the one way in: pending approvals use it now (`receivers`), the
automations engine's `notify` actions and alarm trips will."""
