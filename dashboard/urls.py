from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard import accounts, automations, confirmations, invoices, notifications, oauth, scenes, views
from dashboard.language import switch_language
from dashboard.tokens import access, create_token, revoke_token

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(template_name="dashboard/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="dashboard:login"), name="logout"),
    path("language/", switch_language, name="language"),
    path("lights/<slug:name>/", views.switch_light, name="light"),
    path("all-lights-off/", views.all_lights_off, name="all_lights_off"),
    path("alarm/", views.set_alarm, name="alarm"),
    path("people/<str:name>/", views.set_presence, name="person"),
    path("scenes/", scenes.scenes, name="scenes"),
    path("scenes/activate/", scenes.activate_scene, name="activate_scene"),
    path("scenes/save/", scenes.save_scene, name="save_scene"),
    path("scenes/delete/", scenes.delete_scene, name="delete_scene"),
    path("automations/", automations.automations, name="automations"),
    path("automations/automation/", automations.automation, name="automation"),
    path("automations/edit/", automations.editor, name="automation_edit"),
    path("automations/enabled/", automations.set_enabled, name="automation_enabled"),
    path("automations/restore/", automations.restore, name="automation_restore"),
    path("automations/delete/", automations.delete, name="automation_delete"),
    path("sensors/", views.sensors, name="sensors"),
    path(
        "sensors/<str:zone>/<str:device_type>/<str:device_id>/<str:channel>/",
        views.sensor_detail,
        name="sensor",
    ),
    path(
        "sensors/<str:zone>/<str:device_type>/<str:device_id>/<str:channel>/label/",
        views.sensor_label,
        name="sensor_label",
    ),
    path("devices/", views.devices, name="devices"),
    path("devices/add/", views.add_device, name="add_device"),
    path("devices/unbind/", views.unbind_device, name="unbind_device"),
    path("devices/remove/", views.remove_device, name="remove_device"),
    path("devices/approve/", views.approve_device, name="approve_device"),
    path("devices/label/", views.device_label, name="device_label"),
    path("invoices/", invoices.invoices, name="invoices"),
    path("invoices/<int:pk>/pdf/", invoices.invoice_pdf, name="invoice_pdf"),
    path("invoices/<int:pk>/pdf/view/", invoices.invoice_pdf, {"inline": True}, name="invoice_pdf_view"),
    path("invoices/batches/<int:pk>/", invoices.batch, name="batch"),
    path("invoices/batches/<int:pk>/manifest.json", invoices.batch_manifest, name="batch_manifest"),
    path("invoices/batches/<int:pk>/pdfs.zip", invoices.batch_archive, name="batch_archive"),
    path("invoices/batches/<int:pk>/files/<int:position>/pdf/", invoices.batch_file_pdf, name="batch_pdf"),
    path("activity/", views.activity, name="activity"),
    path("requests/", confirmations.requests, name="requests"),
    path("notifications/", notifications.notifications, name="notifications"),
    path("notifications/dismiss/", notifications.dismiss, name="dismiss_notifications"),
    path("requests/<int:pk>/", confirmations.request_page, name="request"),
    path("access/", access, name="access"),
    path("access/tokens/", create_token, name="create_token"),
    path("access/tokens/<int:pk>/revoke/", revoke_token, name="revoke_token"),
    path("connected-apps/", oauth.connected_apps, name="connected_apps"),
    path("connected-apps/<int:grant_id>/revoke/", oauth.revoke_app, name="revoke_app"),
    path("accounts/", accounts.accounts, name="accounts"),
    path("accounts/add/", accounts.add_account, name="add_account"),
    path("accounts/<str:username>/role/", accounts.change_role, name="account_role"),
    path("accounts/<str:username>/deactivate/", accounts.deactivate, name="deactivate_account"),
]
