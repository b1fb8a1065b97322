"""`/xiaozhi/ota/` (also without its slash, as a device's OTA URL may be typed) and
`/xiaozhi/ota/activate`, where the firmware joins `activate` to its OTA URL."""

from django.urls import path

from devices.xiaozhi import views

urlpatterns = [
    path("ota/", views.ota, name="xiaozhi-ota"),
    path("ota", views.ota),
    path("ota/activate", views.activate, name="xiaozhi-activate"),
    path("ota/activate/", views.activate),
]
