from django.urls import path

from treeview import views

app_name = "treeview"

urlpatterns = [
    path("", views.session_list, name="session_list"),
]
