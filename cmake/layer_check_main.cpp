// The whole of one layer's library, linked with only the layers below it
// (cmake/VitLayers.cmake): the link fails if the layer calls upward.
int main() {
  return 0;
}
